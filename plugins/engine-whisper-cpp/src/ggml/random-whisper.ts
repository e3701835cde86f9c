/**
 * Writes a Whisper model with random weights in whisper.cpp's own ggml file format, the format of the
 * `ggml-*.bin` files on the `ggerganov/whisper.cpp` hub repository (written by its `models/convert-pt-to-ggml.py`, read
 * by `whisper_model_load` in `whisper.cpp/src/whisper.cpp`): the magic, eleven int32 hyper-parameters, the mel filter
 * bank, the vocabulary, then every tensor as `n_dims, name length, type, dims…, name, data`. whisper.cpp takes every
 * size from the file, so a model a few megabytes large runs through the same code as large-v3; its text is noise.
 */
import {createWriteStream} from 'node:fs'
import {once} from 'node:events'

/** `GGML_FILE_MAGIC`, "ggml" as a little-endian uint32. */
const GGML_FILE_MAGIC = 0x67_67_6d_6c
const GGML_TYPE_F32 = 0
/** A multilingual vocabulary's size (tiny … large-v2): 50257 text tokens, then the special and language tokens. */
const MULTILINGUAL_VOCAB = 51_865
/** Text tokens (GPT-2's byte-level BPE); whisper.cpp names the special tokens after them itself. */
const TEXT_TOKENS = 50_257
const MEL_BINS = 80
/** Frequency bins of whisper.cpp's 400-point FFT. */
const FFT_BINS = 201

export interface RandomWhisperOptions {
  /** Width of the encoder and decoder (tiny: 384). */
  state?: number
  heads?: number
  audioLayers?: number
  textLayers?: number
  /** Tokens the decoder reads at most (every Whisper: 448). */
  textContext?: number
  /**
   * Encoder positions (every Whisper: 1500, 30 s of audio at 100 mel frames a second, halved by the second
   * convolution). whisper.cpp encodes as many as the file says from the start of each 30 s window, so fewer read only
   * the start of it: the encoder's cost, most of a transcription's, shrinks with the square of this.
   */
  audioContext?: number
  seed?: number
}

/**
 * Sixteen text positions cap what a window decodes at a few tokens (whisper.cpp decodes at most half the text
 * context), and 150 encoder positions read the first 3 s of each window: a random model's text is noise either way,
 * and a transcription costs a tenth of what the full 1500 positions cost.
 */
export const TINY_RANDOM_WHISPER: Required<RandomWhisperOptions> = {audioContext: 150, audioLayers: 1, heads: 2, seed: 42, state: 64, textContext: 16, textLayers: 1}

interface TensorPlan {
  name: string
  /** ggml order: ne[0] is the contiguous dimension. */
  shape: number[]
  /** Layer norms' weights start at 1, everything else is noise around 0. */
  fill: 'noise' | 'ones' | 'zeros'
}

function tensorPlan(o: Required<RandomWhisperOptions>): TensorPlan[] {
  const n = o.state
  const noise = (name: string, ...shape: number[]): TensorPlan => ({fill: 'noise', name, shape})
  const norm = (prefix: string): TensorPlan[] => [
    {fill: 'ones', name: `${prefix}.weight`, shape: [n]},
    {fill: 'zeros', name: `${prefix}.bias`, shape: [n]},
  ]
  const attention = (prefix: string): TensorPlan[] => [
    noise(`${prefix}.query.weight`, n, n),
    noise(`${prefix}.query.bias`, n),
    noise(`${prefix}.key.weight`, n, n),
    noise(`${prefix}.value.weight`, n, n),
    noise(`${prefix}.value.bias`, n),
    noise(`${prefix}.out.weight`, n, n),
    noise(`${prefix}.out.bias`, n),
  ]
  const block = (prefix: string, cross: boolean): TensorPlan[] => [
    ...norm(`${prefix}.mlp_ln`),
    noise(`${prefix}.mlp.0.weight`, n, 4 * n),
    noise(`${prefix}.mlp.0.bias`, 4 * n),
    noise(`${prefix}.mlp.2.weight`, 4 * n, n),
    noise(`${prefix}.mlp.2.bias`, n),
    ...norm(`${prefix}.attn_ln`),
    ...attention(`${prefix}.attn`),
    ...(cross ? [...norm(`${prefix}.cross_attn_ln`), ...attention(`${prefix}.cross_attn`)] : []),
  ]
  const layers = (count: number, make: (index: number) => TensorPlan[]) => Array.from({length: count}, (_, index) => make(index)).flat()
  return [
    noise('encoder.positional_embedding', n, o.audioContext),
    noise('encoder.conv1.weight', 3, MEL_BINS, n),
    noise('encoder.conv1.bias', 1, n),
    noise('encoder.conv2.weight', 3, n, n),
    noise('encoder.conv2.bias', 1, n),
    ...norm('encoder.ln_post'),
    ...layers(o.audioLayers, (i) => block(`encoder.blocks.${i}`, false)),
    noise('decoder.positional_embedding', n, o.textContext),
    noise('decoder.token_embedding.weight', n, MULTILINGUAL_VOCAB),
    ...norm('decoder.ln'),
    ...layers(o.textLayers, (i) => block(`decoder.blocks.${i}`, true)),
  ]
}

/** mulberry32: small, seeded and the same everywhere, so a recipe always writes the same bytes. */
function seededNoise(seed: number, scale: number): (into: Float32Array) => void {
  let state = seed >>> 0
  return (into) => {
    for (let i = 0; i < into.length; i++) {
      state = (state + 0x6d_2b_79_f5) | 0
      let t = Math.imul(state ^ (state >>> 15), 1 | state)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      into[i] = ((((t ^ (t >>> 14)) >>> 0) / 4_294_967_296) * 2 - 1) * scale
    }
  }
}

/**
 * Triangular filters on the mel scale, as Whisper's own `mel_filters.npz` holds them (librosa's, slaney-normalised
 * aside): real filters, so the encoder sees a real spectrogram of whatever audio it is given.
 */
function melFilters(): Float32Array {
  const toMel = (hz: number) => 2595 * Math.log10(1 + hz / 700)
  const toHz = (mel: number) => 700 * (10 ** (mel / 2595) - 1)
  const top = toMel(8000)
  const edges = Array.from({length: MEL_BINS + 2}, (_, i) => toHz((top * i) / (MEL_BINS + 1)))
  const filters = new Float32Array(MEL_BINS * FFT_BINS)
  for (let m = 0; m < MEL_BINS; m++) {
    const [low, centre, high] = [edges[m], edges[m + 1], edges[m + 2]]
    for (let bin = 0; bin < FFT_BINS; bin++) {
      const hz = (bin * 8000) / (FFT_BINS - 1)
      const weight = hz <= centre ? (hz - low) / (centre - low) : (high - hz) / (high - centre)
      filters[m * FFT_BINS + bin] = Math.max(0, weight)
    }
  }

  return filters
}

/** GPT-2's id of the lone space, which whisper.cpp looks up by text to suppress a blank start. */
const SPACE_TOKEN = 220

/** Letters-only pseudo-words, one per text token, so that random output is readable text with spaces. */
function vocabulary(): Buffer[] {
  const letters = 'etaoinshrdlucmfwypvbgkjqxz'
  return Array.from({length: TEXT_TOKENS}, (_, id) => {
    if (id === SPACE_TOKEN) return Buffer.from(' ')
    let word = id % 3 === 0 ? ' ' : ''
    for (let rest = id + 1; rest > 0; rest = Math.floor(rest / letters.length)) word += letters[rest % letters.length]
    return Buffer.from(word, 'utf8')
  })
}

const int32s = (...values: number[]) => Buffer.from(new Int32Array(values).buffer)

/** Writes the model to `filePath` and returns its sizes. */
export async function writeRandomWhisperGgml(filePath: string, options: RandomWhisperOptions = {}): Promise<Required<RandomWhisperOptions>> {
  const o = {...TINY_RANDOM_WHISPER, ...options}
  const out = createWriteStream(filePath)
  const write = async (chunk: Buffer | Uint8Array) => {
    if (!out.write(chunk)) await once(out, 'drain')
  }

  try {
    await write(Buffer.from(new Uint32Array([GGML_FILE_MAGIC]).buffer))
    // n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx, n_text_state, n_text_head, n_text_layer, n_mels, ftype
    await write(int32s(MULTILINGUAL_VOCAB, o.audioContext, o.state, o.heads, o.audioLayers, o.textContext, o.state, o.heads, o.textLayers, MEL_BINS, GGML_TYPE_F32))
    await write(int32s(MEL_BINS, FFT_BINS))
    await write(Buffer.from(melFilters().buffer))
    const words = vocabulary()
    await write(int32s(words.length))
    for (const word of words) await write(Buffer.concat([int32s(word.length), word]))

    for (const [index, tensor] of tensorPlan(o).entries()) {
      const name = Buffer.from(tensor.name, 'utf8')
      await write(Buffer.concat([int32s(tensor.shape.length, name.length, GGML_TYPE_F32, ...tensor.shape), name]))
      const data = new Float32Array(tensor.shape.reduce((a, b) => a * b, 1))
      if (tensor.fill === 'ones') data.fill(1)
      else if (tensor.fill === 'noise') seededNoise(o.seed * 7919 + index, 1 / Math.sqrt(o.state))(data)
      await write(Buffer.from(data.buffer))
    }
  } finally {
    out.end()
    await once(out, 'close')
  }

  return o
}
