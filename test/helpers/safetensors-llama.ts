/**
 * A tiny llama chat model as a Hugging Face repository folder (config, tokenizer, bfloat16 safetensors weights), with
 * seeded random weights, written without Python: what the Python engines (vLLM, transformers) load, for tests that
 * serve it from the local hub. It speaks gibberish from a 100-word vocabulary.
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {uniformRows} from '../../plugins/engine-llama-cpp/src/gguf/random-tensors.js'

const SPECIAL = ['<unk>', '<s>', '</s>']
const WORDS = (
  'the a of to and in is it you that he was for on are as with his they at be this have from or one had by word but not what all were we when ' +
  'your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into ' +
  'time has look two more write go see number no way could people my than first water been call who oil its now find long down day did get come'
).split(' ')
const HIDDEN = 128
const INTERMEDIATE = 256
const LAYERS = 2
const HEADS = 2
const CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"

/** float32 → bfloat16, rounding to nearest even, as torch does. */
function toBfloat16(values: Float32Array): Buffer {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length)
  const out = Buffer.alloc(values.length * 2)
  for (let i = 0; i < bits.length; i++) out.writeUInt16LE(((bits[i] + 0x7fff + ((bits[i] >>> 16) & 1)) >>> 16) & 0xffff, i * 2)
  return out
}

function tensor(shape: number[], seed: number, fill?: number): Buffer {
  const [rows, length] = shape.length === 1 ? [1, shape[0]] : shape
  const values = new Float32Array(rows * length)
  if (fill === undefined) {
    let offset = 0
    for (const chunk of uniformRows(length, rows, 0.05, seed)) {
      values.set(chunk, offset)
      offset += chunk.length
    }
  } else values.fill(fill)
  return toBfloat16(values)
}

/** The safetensors format: an 8-byte header length, a JSON header of dtype, shape and offsets, then the bytes. */
function safetensors(tensors: Array<[string, number[], Buffer]>): Buffer {
  const header: Record<string, unknown> = {__metadata__: {format: 'pt'}}
  let offset = 0
  for (const [name, shape, data] of tensors) {
    header[name] = {data_offsets: [offset, offset + data.length], dtype: 'BF16', shape}
    offset += data.length
  }

  const json = Buffer.from(JSON.stringify(header))
  const length = Buffer.alloc(8)
  length.writeBigUInt64LE(BigInt(json.length))
  return Buffer.concat([length, json, ...tensors.map(([, , data]) => data)])
}

/** Writes the repository's files into `directory` and answers their names. */
export async function writeSafetensorsLlama(directory: string): Promise<string[]> {
  await mkdir(directory, {recursive: true})
  const vocab = Object.fromEntries([...SPECIAL, ...WORDS].map((token, id) => [token, id]))
  const vocabSize = SPECIAL.length + WORDS.length
  let seed = 1
  const weights: Array<[string, number[], Buffer]> = [['model.embed_tokens.weight', [vocabSize, HIDDEN], tensor([vocabSize, HIDDEN], seed++)]]
  for (let layer = 0; layer < LAYERS; layer++) {
    const prefix = `model.layers.${layer}`
    for (const norm of ['input_layernorm', 'post_attention_layernorm']) weights.push([`${prefix}.${norm}.weight`, [HIDDEN], tensor([HIDDEN], 0, 1)])
    for (const projection of ['q_proj', 'k_proj', 'v_proj', 'o_proj']) weights.push([`${prefix}.self_attn.${projection}.weight`, [HIDDEN, HIDDEN], tensor([HIDDEN, HIDDEN], seed++)])
    for (const projection of ['gate_proj', 'up_proj']) weights.push([`${prefix}.mlp.${projection}.weight`, [INTERMEDIATE, HIDDEN], tensor([INTERMEDIATE, HIDDEN], seed++)])
    weights.push([`${prefix}.mlp.down_proj.weight`, [HIDDEN, INTERMEDIATE], tensor([HIDDEN, INTERMEDIATE], seed++)])
  }

  weights.push(['model.norm.weight', [HIDDEN], tensor([HIDDEN], 0, 1)], ['lm_head.weight', [vocabSize, HIDDEN], tensor([vocabSize, HIDDEN], seed++)])
  const config = {
    architectures: ['LlamaForCausalLM'],
    bos_token_id: 1,
    eos_token_id: 2,
    head_dim: HIDDEN / HEADS,
    hidden_act: 'silu',
    hidden_size: HIDDEN,
    intermediate_size: INTERMEDIATE,
    max_position_embeddings: 2048,
    model_type: 'llama',
    num_attention_heads: HEADS,
    num_hidden_layers: LAYERS,
    num_key_value_heads: HEADS,
    rms_norm_eps: 1e-6,
    rope_theta: 10_000,
    tie_word_embeddings: false,
    torch_dtype: 'bfloat16',
    vocab_size: vocabSize,
  }
  const special = (content: string, id: number) => ({content, id, lstrip: false, normalized: false, rstrip: false, single_word: false, special: true})
  const tokenizer = {
    added_tokens: SPECIAL.map(special),
    decoder: {cleanup: true, prefix: '##', type: 'WordPiece'},
    model: {type: 'WordLevel', unk_token: '<unk>', vocab},
    normalizer: null,
    padding: null,
    post_processor: null,
    pre_tokenizer: {type: 'Whitespace'},
    truncation: null,
    version: '1.0',
  }
  const files: Record<string, string | Buffer> = {
    'config.json': JSON.stringify(config, null, 2),
    'generation_config.json': JSON.stringify({bos_token_id: 1, eos_token_id: 2}),
    'model.safetensors': safetensors(weights),
    'tokenizer.json': JSON.stringify(tokenizer),
    'tokenizer_config.json': JSON.stringify({bos_token: '<s>', chat_template: CHAT_TEMPLATE, eos_token: '</s>', model_max_length: 2048, tokenizer_class: 'PreTrainedTokenizerFast', unk_token: '<unk>'}),
  }
  for (const [name, content] of Object.entries(files)) await writeFile(join(directory, name), content)
  return Object.keys(files)
}
