/**
 * Real, loadable llama-architecture GGUF models with random weights, generated on the fly: the catalogue's
 * `tiny-random-llm`, and the models tests and benchmarks run.
 *
 * They exercise the genuine llama.cpp code paths (loading, tokenization, chat templates, batching, sampling, KV cache)
 * without downloading a model: `tiny` is written in milliseconds and generates a token in well under a millisecond,
 * `medium` is big enough for throughput and memory measurements. What they write is gibberish made of the vocabulary's
 * word pieces.
 *
 * Deliberate departures from a trained model, all so that tests behave predictably:
 * - The output rows of the special and byte tokens are zero, so their logits are exactly 0 while the word pieces'
 *   logits have a standard deviation of 3: sampling practically never picks them (greedy never does). A response
 *   therefore runs until `maxTokens` or a stop string, and its text is printable. `endOfTurnLogit` makes the model end
 *   its turns with `<|im_end|>` instead.
 * - Weights come from a PRNG seeded by the model seed and the tensor name, so the same options give byte-identical
 *   files, and changing e.g. `blockCount` leaves the other tensors' values unchanged.
 */
import {constantChunks, type RowShaper, tensorSeed, uniformRows} from './random-tensors.js'
import {buildVocabulary, SPECIAL_TOKEN_IDS, TOKEN_TYPE} from './tokenizer.js'
import {writeGguf, gguf, type GgufFile, type GgufMetadataValue, type GgufTensor, type GgmlTensorType} from './writer.js'

export {SPECIAL_TOKEN_IDS as RANDOM_LLAMA_TOKENS, byteTokenId, BASE_VOCABULARY_SIZE, MIN_VOCABULARY_SIZE} from './tokenizer.js'

export interface RandomLlamaOptions {
  /** Hidden size (`llama.embedding_length`); a multiple of `headCount` with an even head size. */
  embeddingLength?: number
  /** Number of transformer blocks. */
  blockCount?: number
  headCount?: number
  /** Fewer than `headCount` (and dividing it) gives grouped-query attention. */
  headCountKv?: number
  feedForwardLength?: number
  /** Training context length stored in the file; node-llama-cpp's "auto" context size never exceeds it. */
  contextLength?: number
  /**
   * Exact number of tokens. Above the built-in vocabulary ({@link BASE_VOCABULARY_SIZE}) it is padded with synthetic
   * normal tokens (pseudo-words); below, the least frequent word pieces are dropped, down to
   * {@link MIN_VOCABULARY_SIZE}. Special-token and byte-token ids never change.
   */
  vocabSize?: number
  /** Seed of the weights; the vocabulary does not depend on it. */
  seed?: number
  /** Jinja chat template stored as `tokenizer.chat_template`; defaults to ChatML, `null` stores none. */
  chatTemplate?: string | null
  /** `general.name`. */
  name?: string
  /** Storage type of the weight matrices; norms stay F32 as in converted models. F16 halves the file size. */
  weightType?: GgmlTensorType
  /**
   * Lets the model end its turn by itself: `<|im_end|>` gets about this logit (±30%, depending on the context) at
   * every step, next to word-piece logits of standard deviation 3 whose maximum is typically 8 (tiny) to 12 (medium).
   * So 25 ends the turn at once; a value a little under that maximum (about 6 for tiny, 8 for small) ends it after a
   * seed-dependent number of tokens, from a couple to dozens; unset (the default) never ends it.
   * This is how to reach node-llama-cpp's `stopReason: "eogToken"`: its TokenBias silently skips end-of-generation
   * tokens, so biasing `<|im_end|>` up at run time has no effect. Only the `<|im_end|>` output row depends on this
   * option, so greedy output matches the model without it up to the point where the turn ends.
   */
  endOfTurnLogit?: number | null
}

export interface RandomLlamaGguf {
  filePath: string
  /** File size. */
  bytes: number
  vocabSize: number
  /** Total number of weights in the file. */
  parameters: number
}

/**
 * The usual ChatML template (as shipped with e.g. Qwen and OpenHermes models); node-llama-cpp recognizes it as ChatML.
 */
export const CHATML_TEMPLATE =
  '{% for message in messages %}' +
  "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  '{% endfor %}' +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

/**
 * Preset shapes. Every option not given to {@link writeRandomLlamaGguf} comes from `tiny`, so
 * `{...RANDOM_LLAMA_SIZES.small, seed: 7}` and `{blockCount: 4}` both work.
 *
 * - `tiny`: ~140k parameters, ~0.6 MB; the default for tests (loads and generates in milliseconds).
 * - `small`: ~4.2M parameters, ~17 MB; for tests that need measurable but quick compute.
 * - `medium`: ~137M parameters, ~550 MB in F32; for benchmarks and memory estimation. Write it once per run.
 */
export const RANDOM_LLAMA_SIZES = Object.freeze({
  tiny: Object.freeze({
    name: 'random-llama-tiny',
    embeddingLength: 64,
    blockCount: 2,
    headCount: 4,
    headCountKv: 2,
    feedForwardLength: 128,
    contextLength: 2048,
    vocabSize: 512,
  }),
  small: Object.freeze({
    name: 'random-llama-small',
    embeddingLength: 256,
    blockCount: 4,
    headCount: 8,
    headCountKv: 4,
    feedForwardLength: 768,
    contextLength: 4096,
    vocabSize: 2048,
  }),
  medium: Object.freeze({
    name: 'random-llama-medium',
    embeddingLength: 1024,
    blockCount: 8,
    headCount: 16,
    headCountKv: 4,
    feedForwardLength: 2048,
    contextLength: 4096,
    vocabSize: 32000,
  }),
} satisfies Record<string, Readonly<RandomLlamaOptions>>)

const DEFAULT_SEED = 42
const RMS_NORM_EPSILON = 1e-5
const ROPE_FREQ_BASE = 10_000
/** Standard deviation of the word pieces' logits; large enough for a clear argmax, small enough to keep sampling varied. */
const LOGIT_STD = 3
/** Value of the constant residual channel 0; on the scale of the other channels so it does not dominate the norms. */
const BIAS_CHANNEL_VALUE = 1

/**
 * Typical value of the bias channel after output_norm, BIAS_CHANNEL_VALUE / RMS(final residual). Each block adds its
 * attention and feed-forward outputs to the residual, so its mean square grows about linearly with depth; the factor
 * is fitted to logits measured with 1 to 12 blocks and 64 to 1024 channels (the result varies ±30% with the context).
 */
function expectedBiasInput(config: ResolvedConfig): number {
  return BIAS_CHANNEL_VALUE / Math.sqrt(0.67 * (1 + config.blockCount))
}

/** Generates a model file (see the module comment). The directory must exist; the file is replaced atomically. */
export async function writeRandomLlamaGguf(filePath: string, options: RandomLlamaOptions = {}): Promise<RandomLlamaGguf> {
  const {file, vocabSize} = buildRandomLlama(options)
  const written = await writeGguf(filePath, file)
  return {filePath, bytes: written.bytes, vocabSize, parameters: written.elements}
}

/**
 * The same model as {@link writeRandomLlamaGguf}, stored as `filePaths.length` split files the way llama.cpp's
 * gguf-split writes them: every part carries `split.no`, `split.count` and `split.tensors.count`, the first also all
 * the model's metadata, and the tensors are shared out in order. Name the files `…-00001-of-0000N.gguf` so llama.cpp,
 * given the first, finds the others next to it.
 */
export async function writeRandomLlamaGgufSplit(filePaths: readonly string[], options: RandomLlamaOptions = {}): Promise<RandomLlamaGguf[]> {
  const {file, vocabSize} = buildRandomLlama(options)
  const count = filePaths.length
  const perPart = Math.ceil(file.tensors.length / count)
  const out: RandomLlamaGguf[] = []
  for (const [index, filePath] of filePaths.entries()) {
    const split = {
      'split.no': gguf.uint16(index),
      'split.count': gguf.uint16(count),
      'split.tensors.count': gguf.int32(file.tensors.length),
    }
    const written = await writeGguf(filePath, {
      metadata: index === 0 ? {...file.metadata, ...split} : split,
      tensors: file.tensors.slice(index * perPart, (index + 1) * perPart),
    })
    out.push({filePath, bytes: written.bytes, vocabSize, parameters: written.elements})
  }

  return out
}

function buildRandomLlama(options: RandomLlamaOptions): {file: GgufFile; vocabSize: number} {
  const config = resolveConfig(options)
  const tokens = buildVocabulary(config.vocabSize)
  const vocabSize = tokens.length
  const {embeddingLength: d, feedForwardLength: ff} = config
  const headSize = d / config.headCount
  const kvLength = headSize * config.headCountKv
  const matrixType = config.weightType

  const metadata: Record<string, GgufMetadataValue> = {
    'general.architecture': gguf.string('llama'),
    'general.name': gguf.string(config.name),
    // llama_ftype: 0 = ALL_F32, 1 = MOSTLY_F16
    'general.file_type': gguf.uint32(matrixType === 'f16' ? 1 : 0),
    'llama.vocab_size': gguf.uint32(vocabSize),
    'llama.context_length': gguf.uint32(config.contextLength),
    'llama.embedding_length': gguf.uint32(d),
    'llama.block_count': gguf.uint32(config.blockCount),
    'llama.feed_forward_length': gguf.uint32(ff),
    'llama.attention.head_count': gguf.uint32(config.headCount),
    'llama.attention.head_count_kv': gguf.uint32(config.headCountKv),
    'llama.rope.dimension_count': gguf.uint32(headSize),
    'llama.rope.freq_base': gguf.float32(ROPE_FREQ_BASE),
    'llama.attention.layer_norm_rms_epsilon': gguf.float32(RMS_NORM_EPSILON),
    'tokenizer.ggml.model': gguf.string('llama'),
    'tokenizer.ggml.tokens': gguf.stringArray(tokens.map((token) => token.text)),
    'tokenizer.ggml.scores': gguf.float32Array(Float32Array.from(tokens, (token) => token.score)),
    'tokenizer.ggml.token_type': gguf.int32Array(Int32Array.from(tokens, (token) => token.type)),
    'tokenizer.ggml.bos_token_id': gguf.uint32(SPECIAL_TOKEN_IDS.bos),
    'tokenizer.ggml.eos_token_id': gguf.uint32(SPECIAL_TOKEN_IDS.eos),
    'tokenizer.ggml.unknown_token_id': gguf.uint32(SPECIAL_TOKEN_IDS.unk),
    'tokenizer.ggml.add_bos_token': gguf.bool(true),
    'tokenizer.ggml.add_eos_token': gguf.bool(false),
  }
  if (config.chatTemplate !== null)
    metadata['tokenizer.chat_template'] = gguf.string(config.chatTemplate)

  // Scales keep activations near unit variance through every layer (fan-in initialization), so no layer drowns out
  // the others and the logits neither collapse to one token nor flatten into uniform noise.
  const random = (name: string, shape: [number, number], std: number, shapeRow?: RowShaper): GgufTensor => ({
    name,
    shape,
    type: matrixType,
    data: () => uniformRows(shape[0], shape[1], std, tensorSeed(config.seed, name), shapeRow),
  })
  const ones = (name: string, length: number): GgufTensor =>
    ({name, shape: [length], type: 'f32', data: () => constantChunks(length, 1)})

  // llama has no output bias, so residual channel 0 stands in for one: every embedding holds a constant there and
  // no layer writes to it (row 0 of attn_output and ffn_down, the rows producing channel 0, is zero). The output
  // rows then read it as a per-token offset: a random unigram prior for word pieces, endOfTurnLogit for <|im_end|>.
  const embedBiasChannel: RowShaper = (_token, row) => {
    row[0] = BIAS_CHANNEL_VALUE
  }
  const keepBiasChannel: RowShaper = (outputChannel, row) => {
    if (outputChannel === 0)
      row.fill(0)
  }
  const silenced = new Set(tokens.flatMap((token, id) => token.type === TOKEN_TYPE.NORMAL ? [] : [id]))
  const shapeOutputRow: RowShaper = (token, row) => {
    if (!silenced.has(token))
      return
    row.fill(0)
    if (token === SPECIAL_TOKEN_IDS.eos && config.endOfTurnLogit !== null)
      row[0] = config.endOfTurnLogit / expectedBiasInput(config)
  }

  const tensors: GgufTensor[] = [random('token_embd.weight', [d, vocabSize], 1, embedBiasChannel)]
  for (let block = 0; block < config.blockCount; block++) {
    const prefix = `blk.${block}`
    tensors.push(
      ones(`${prefix}.attn_norm.weight`, d),
      random(`${prefix}.attn_q.weight`, [d, d], 1 / Math.sqrt(d)),
      random(`${prefix}.attn_k.weight`, [d, kvLength], 1 / Math.sqrt(d)),
      random(`${prefix}.attn_v.weight`, [d, kvLength], 1 / Math.sqrt(d)),
      random(`${prefix}.attn_output.weight`, [d, d], 1 / Math.sqrt(d), keepBiasChannel),
      ones(`${prefix}.ffn_norm.weight`, d),
      random(`${prefix}.ffn_gate.weight`, [d, ff], 1 / Math.sqrt(d)),
      random(`${prefix}.ffn_up.weight`, [d, ff], 1 / Math.sqrt(d)),
      random(`${prefix}.ffn_down.weight`, [ff, d], 1 / Math.sqrt(ff), keepBiasChannel)
    )
  }
  tensors.push(
    ones('output_norm.weight', d),
    // output_norm leaves a vector of RMS 1, so a row of std s gives logits of std s·√d.
    random('output.weight', [d, vocabSize], LOGIT_STD / Math.sqrt(d), shapeOutputRow)
  )

  return {file: {metadata, tensors}, vocabSize}
}

type ResolvedConfig = Required<Omit<RandomLlamaOptions, 'chatTemplate' | 'endOfTurnLogit'>> &
  {chatTemplate: string | null; endOfTurnLogit: number | null}

function resolveConfig(options: RandomLlamaOptions): ResolvedConfig {
  const defined = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined))
  const config: ResolvedConfig = {
    ...RANDOM_LLAMA_SIZES.tiny,
    seed: DEFAULT_SEED,
    chatTemplate: CHATML_TEMPLATE,
    weightType: 'f32',
    endOfTurnLogit: null,
    ...defined,
  }

  for (const key of ['embeddingLength', 'blockCount', 'headCount', 'headCountKv', 'feedForwardLength', 'contextLength', 'vocabSize'] as const) {
    if (!Number.isSafeInteger(config[key]) || config[key] < 1)
      throw new RangeError(`${key} must be a positive integer, got ${config[key]}`)
  }
  if (!Number.isSafeInteger(config.seed))
    throw new RangeError(`seed must be an integer, got ${config.seed}`)
  if (config.embeddingLength % config.headCount !== 0 || (config.embeddingLength / config.headCount) % 2 !== 0)
    throw new RangeError(`embeddingLength ${config.embeddingLength} must split into ${config.headCount} heads of even size (RoPE rotates pairs)`)
  if (config.headCountKv > config.headCount || config.headCount % config.headCountKv !== 0)
    throw new RangeError(`headCountKv ${config.headCountKv} must divide headCount ${config.headCount} (unset options come from RANDOM_LLAMA_SIZES.tiny)`)
  if (config.endOfTurnLogit !== null && !Number.isFinite(config.endOfTurnLogit))
    throw new RangeError(`endOfTurnLogit must be a finite number or null, got ${config.endOfTurnLogit}`)
  if (config.weightType !== 'f32' && config.weightType !== 'f16')
    throw new RangeError(`weightType must be "f32" or "f16", got ${String(config.weightType)}`)
  return config
}

