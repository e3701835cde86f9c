/**
 * Real, loadable BERT-architecture GGUF models with random weights: a text-embedding model and a cross-encoder
 * reranker, for trying and testing the embedding and rerank APIs without downloading a model.
 *
 * They follow what llama.cpp's converter writes for BERT models (src/models/bert.cpp, convert_hf_to_gguf.py BertModel):
 * learned position and token-type embeddings, post-layer-norm blocks with biases, a WordPiece ("bert") vocabulary, and
 * `bert.pooling_type` saying how token vectors become one vector. A reranker additionally has the classification head
 * llama.cpp applies with LLAMA_POOLING_TYPE_RANK: `cls` (dense + tanh) and `cls.output` (one logit), read from the
 * [CLS] token of "[CLS] query [SEP] document"; node-llama-cpp advertises ranking only for files that have them.
 *
 * The vocabulary is stored the way llama.cpp's converter stores WordPiece: word-initial pieces carry a "▁" prefix and
 * continuation pieces ("##ing") are stored bare. Every lowercase letter, digit and ASCII punctuation mark exists both
 * ways, so any ASCII text tokenizes without [UNK]; the tokenizer lowercases its input first, as uncased BERT models do.
 * Weights come from the same seeded generator as the random llama models, so the same options give identical files.
 */
import {constantChunks, tensorSeed, uniformRows} from './random-tensors.js'
import {TOKEN_TYPE, WORDS} from './tokenizer.js'
import {gguf, writeGguf, type GgufMetadataValue, type GgufTensor} from './writer.js'

/** `enum llama_pooling_type` in llama.h, stored as `bert.pooling_type`. */
export const POOLING_TYPE = {MEAN: 1, CLS: 2, RANK: 4} as const

export interface RandomBertOptions {
  /** `embedding` pools token vectors into one; `reranker` adds the classification head and pools with RANK. */
  kind?: 'embedding' | 'reranker'
  /** Hidden size, and so the length of the embedding vectors. */
  embeddingLength?: number
  blockCount?: number
  headCount?: number
  feedForwardLength?: number
  /** Positions the model was trained for; llama.cpp never gives it a longer context. */
  contextLength?: number
  /** How an embedding model pools (a reranker always reads the [CLS] token): `cls` as bge, `mean` as MiniLM. */
  pooling?: 'cls' | 'mean'
  seed?: number
  name?: string
}

export interface RandomBertGguf {
  filePath: string
  bytes: number
  vocabSize: number
  embeddingLength: number
  contextLength: number
}

/** Ids of the special tokens, the same in every generated BERT model. */
export const RANDOM_BERT_TOKENS = Object.freeze({pad: 0, unk: 1, cls: 2, sep: 3, mask: 4})

const SPECIAL_TOKENS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
const CHARACTERS = [...'abcdefghijklmnopqrstuvwxyz0123456789', ...".,!?'\":;-()[]{}/\\@#$%&*+=<>_~`^|"]
const SUFFIXES = ['s', 'ed', 'ing', 'er', 'ly', 'ion']
const LAYER_NORM_EPSILON = 1e-12
const DEFAULT_SEED = 7

export const RANDOM_BERT_SIZES = Object.freeze({
  tiny: Object.freeze({embeddingLength: 64, blockCount: 2, headCount: 4, feedForwardLength: 128, contextLength: 128}),
})

/** The WordPiece vocabulary as llama.cpp stores it (see the module comment). */
export function buildWordPieceVocabulary(): Array<{text: string; type: number}> {
  const pieces = new Set<string>()
  for (const character of CHARACTERS) pieces.add('▁' + character).add(character)
  for (const word of WORDS) pieces.add('▁' + word.toLowerCase())
  for (const suffix of SUFFIXES) pieces.add(suffix)
  return [
    ...SPECIAL_TOKENS.map((text) => ({text, type: text === '[UNK]' ? TOKEN_TYPE.UNKNOWN : TOKEN_TYPE.CONTROL})),
    ...[...pieces].map((text) => ({text, type: TOKEN_TYPE.NORMAL})),
  ]
}

/** Generates a BERT embedding or reranker model file (see the module comment). The directory must exist. */
export async function writeRandomBertGguf(filePath: string, options: RandomBertOptions = {}): Promise<RandomBertGguf> {
  const {
    blockCount,
    contextLength,
    embeddingLength: d,
    feedForwardLength: ff,
    headCount,
  } = {...RANDOM_BERT_SIZES.tiny, ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined))}
  const kind = options.kind ?? 'embedding'
  const seed = options.seed ?? DEFAULT_SEED
  if (d % headCount !== 0) throw new RangeError(`embeddingLength ${d} must be a multiple of headCount ${headCount}`)
  const tokens = buildWordPieceVocabulary()
  const pooling = kind === 'reranker' ? POOLING_TYPE.RANK : options.pooling === 'mean' ? POOLING_TYPE.MEAN : POOLING_TYPE.CLS

  const metadata: Record<string, GgufMetadataValue> = {
    'general.architecture': gguf.string('bert'),
    'general.name': gguf.string(options.name ?? `random-bert-${kind}`),
    'general.file_type': gguf.uint32(0),
    'bert.context_length': gguf.uint32(contextLength),
    'bert.embedding_length': gguf.uint32(d),
    'bert.feed_forward_length': gguf.uint32(ff),
    'bert.block_count': gguf.uint32(blockCount),
    'bert.attention.head_count': gguf.uint32(headCount),
    'bert.attention.layer_norm_epsilon': gguf.float32(LAYER_NORM_EPSILON),
    'bert.attention.causal': gguf.bool(false),
    'bert.pooling_type': gguf.uint32(pooling),
    'tokenizer.ggml.model': gguf.string('bert'),
    'tokenizer.ggml.tokens': gguf.stringArray(tokens.map((token) => token.text)),
    'tokenizer.ggml.token_type': gguf.int32Array(Int32Array.from(tokens, (token) => token.type)),
    'tokenizer.ggml.token_type_count': gguf.uint32(2),
    'tokenizer.ggml.bos_token_id': gguf.uint32(RANDOM_BERT_TOKENS.cls),
    'tokenizer.ggml.cls_token_id': gguf.uint32(RANDOM_BERT_TOKENS.cls),
    'tokenizer.ggml.seperator_token_id': gguf.uint32(RANDOM_BERT_TOKENS.sep),
    'tokenizer.ggml.padding_token_id': gguf.uint32(RANDOM_BERT_TOKENS.pad),
    'tokenizer.ggml.unknown_token_id': gguf.uint32(RANDOM_BERT_TOKENS.unk),
    'tokenizer.ggml.mask_token_id': gguf.uint32(RANDOM_BERT_TOKENS.mask),
  }

  const random = (name: string, shape: [number, number], std: number): GgufTensor => ({
    name,
    shape,
    type: 'f32',
    data: () => uniformRows(shape[0], shape[1], std, tensorSeed(seed, name)),
  })
  const constant = (name: string, length: number, value: number): GgufTensor => ({name, shape: [length], type: 'f32', data: () => constantChunks(length, value)})
  // Layer norms start as the identity (weight 1, bias 0) and dense biases at 0, as in a freshly initialized BERT.
  const norm = (name: string) => [constant(`${name}.weight`, d, 1), constant(`${name}.bias`, d, 0)]

  const tensors: GgufTensor[] = [
    random('token_embd.weight', [d, tokens.length], 1),
    random('token_types.weight', [d, 2], 0.1),
    random('position_embd.weight', [d, contextLength], 0.1),
    ...norm('token_embd_norm'),
  ]
  for (let block = 0; block < blockCount; block++) {
    const prefix = `blk.${block}`
    tensors.push(
      random(`${prefix}.attn_q.weight`, [d, d], 1 / Math.sqrt(d)),
      constant(`${prefix}.attn_q.bias`, d, 0),
      random(`${prefix}.attn_k.weight`, [d, d], 1 / Math.sqrt(d)),
      constant(`${prefix}.attn_k.bias`, d, 0),
      random(`${prefix}.attn_v.weight`, [d, d], 1 / Math.sqrt(d)),
      constant(`${prefix}.attn_v.bias`, d, 0),
      random(`${prefix}.attn_output.weight`, [d, d], 1 / Math.sqrt(d)),
      constant(`${prefix}.attn_output.bias`, d, 0),
      ...norm(`${prefix}.attn_output_norm`),
      random(`${prefix}.ffn_up.weight`, [d, ff], 1 / Math.sqrt(d)),
      constant(`${prefix}.ffn_up.bias`, ff, 0),
      random(`${prefix}.ffn_down.weight`, [ff, d], 1 / Math.sqrt(ff)),
      constant(`${prefix}.ffn_down.bias`, d, 0),
      ...norm(`${prefix}.layer_output_norm`),
    )
  }

  if (kind === 'reranker') {
    // The [CLS] vectors of different inputs differ only a little in a random model (the same token at the same
    // position dominates them), so the output row is scaled up until relevance logits differ by about 1 between
    // documents: scores spread over (0, 1) and sort clearly instead of all sitting near 0.5.
    tensors.push(
      random('cls.weight', [d, d], 1 / Math.sqrt(d)),
      constant('cls.bias', d, 0),
      random('cls.output.weight', [d, 1], 8 / Math.sqrt(d)),
      constant('cls.output.bias', 1, 0),
    )
  }

  const written = await writeGguf(filePath, {metadata, tensors})
  return {bytes: written.bytes, contextLength, embeddingLength: d, filePath, vocabSize: tokens.length}
}
