/**
 * A small SentencePiece-style ("llama" tokenizer model) vocabulary for generated random-weight models.
 *
 * How llama.cpp's SPM tokenizer uses it (src/llama-vocab.cpp, llm_tokenizer_spm_session): the text gets a leading
 * space, spaces become "▁", the text is split into UTF-8 characters, and adjacent symbols are merged, highest token
 * score first, for as long as the merged string is itself a token. Whatever is left that is not a token is emitted as
 * its UTF-8 bytes through the `<0xXX>` tokens. Two consequences shape this vocabulary:
 *
 * - Any text round-trips, because all 256 byte tokens exist; but a lone "▁" that is not a token would come back as the
 *   literal character "▁" instead of a space, so "▁" itself is a token.
 * - A word only becomes one token if it can be reached by merging two tokens at every step, so every word piece comes
 *   with all of its prefixes ("▁t", "▁th", "▁the"), and the list is ordered so that each prefix precedes its extensions;
 *   cutting the list anywhere therefore keeps every remaining word reachable.
 *
 * Ids are stable: special tokens and bytes come first and never move when the vocabulary is grown or trimmed.
 */

/** `enum llama_token_type` in llama.cpp (the values of `tokenizer.ggml.token_type`). */
export const TOKEN_TYPE = {
  UNDEFINED: 0,
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const
export type TokenType = (typeof TOKEN_TYPE)[keyof typeof TOKEN_TYPE]

/**
 * Ids of the special tokens; the same in every generated model. `eos` is `<|im_end|>` so that a ChatML turn ends
 * generation; `</s>` is present (llama.cpp's SPM default) but not the end-of-sequence token.
 */
export const SPECIAL_TOKEN_IDS = Object.freeze({
  unk: 0,
  bos: 1,
  endOfText: 2,
  imStart: 3,
  imEnd: 4,
  eos: 4,
})

const SPECIAL_TOKENS: readonly {text: string; type: TokenType}[] = [
  {text: '<unk>', type: TOKEN_TYPE.UNKNOWN},
  {text: '<s>', type: TOKEN_TYPE.CONTROL},
  {text: '</s>', type: TOKEN_TYPE.CONTROL},
  {text: '<|im_start|>', type: TOKEN_TYPE.CONTROL},
  {text: '<|im_end|>', type: TOKEN_TYPE.CONTROL},
]

const FIRST_BYTE_TOKEN_ID = SPECIAL_TOKENS.length

/** Id of the byte-fallback token `<0xXX>` for `byte`. */
export function byteTokenId(byte: number): number {
  if (!Number.isInteger(byte) || byte < 0 || byte > 255)
    throw new RangeError(`Not a byte: ${byte}`)
  return FIRST_BYTE_TOKEN_ID + byte
}

const SPACE = '▁'

// Every printable ASCII character except the space, which is "▁".
const SINGLE_CHARACTERS = [
  ...'abcdefghijklmnopqrstuvwxyz',
  ...'0123456789',
  ...".,!?'\":;-()[]{}/\\@#$%&*+=<>_~`^|",
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
]

// Most frequent first; each is stored as "▁word" together with its prefixes (the WordPiece vocabulary reuses them).
export const WORDS = [
  'the', 'a', 'The', 'Hello', 'hello', 'world', 'and', 'to', 'of', 'in', 'is', 'it', 'you', 'that', 'he', 'was',
  'for', 'on', 'are', 'with', 'as', 'I', 'his', 'they', 'be', 'at', 'one', 'have', 'this', 'from', 'or', 'had', 'by', 'not', 'but', 'what', 'all',
  'were', 'we', 'when', 'your', 'can', 'said', 'there', 'use', 'an', 'each', 'which', 'she', 'do', 'how', 'their',
  'if', 'will', 'up', 'other', 'about', 'out', 'many', 'then', 'them', 'these', 'so', 'some', 'her', 'would', 'make',
  'like', 'him', 'into', 'time', 'has', 'look', 'two', 'more', 'write', 'go', 'see', 'number', 'no', 'way', 'could',
  'people', 'my', 'than', 'first', 'water', 'been', 'call', 'who', 'its', 'now', 'find', 'long', 'down', 'day',
  'did', 'get', 'come', 'made', 'may', 'part', 'model', 'test', 'yes',
]

export interface VocabularyToken {
  readonly text: string
  /** SentencePiece log-probability; higher merges first. */
  readonly score: number
  readonly type: TokenType
}

/** Token count of the built-in vocabulary: what {@link buildVocabulary} returns without a size. */
export const BASE_VOCABULARY_SIZE = baseTokens().length

/**
 * Smallest vocabulary that still covers everything: the special tokens, the bytes, "▁" and the single characters.
 * Trimming below {@link BASE_VOCABULARY_SIZE} drops the least frequent word pieces first.
 */
export const MIN_VOCABULARY_SIZE = SPECIAL_TOKENS.length + 256 + 1 + SINGLE_CHARACTERS.length

/**
 * The vocabulary, trimmed or padded to exactly `size` tokens. Padding tokens are made-up "▁"-prefixed pseudo-words
 * ("▁fuba", "▁rapobo", ...) of type NORMAL, so that sampled text stays readable and bigger vocabularies behave like
 * real ones in the output layer, even though the tokenizer rarely produces them from input text.
 */
export function buildVocabulary(size: number = BASE_VOCABULARY_SIZE): VocabularyToken[] {
  if (!Number.isSafeInteger(size) || size < MIN_VOCABULARY_SIZE)
    throw new RangeError(`Vocabulary size must be an integer of at least ${MIN_VOCABULARY_SIZE}, got ${size}`)

  const tokens = baseTokens().slice(0, size)
  const taken = new Set(tokens.map((token) => token.text))
  let nextScore = tokens[tokens.length - 1]!.score - 1
  for (const word of pseudoWords()) {
    if (tokens.length >= size)
      break
    const text = SPACE + word
    if (taken.has(text))
      continue
    taken.add(text)
    tokens.push({text, score: nextScore--, type: TOKEN_TYPE.NORMAL})
  }
  return tokens
}

function baseTokens(): VocabularyToken[] {
  const tokens: VocabularyToken[] = SPECIAL_TOKENS.map(({text, type}) => ({text, score: 0, type}))
  for (let byte = 0; byte < 256; byte++)
    tokens.push({text: `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`, score: 0, type: TOKEN_TYPE.BYTE})

  // Scores fall with rank like a real SentencePiece model's log-probabilities.
  const pieces: string[] = [SPACE, ...SINGLE_CHARACTERS]
  const seen = new Set(pieces)
  for (const word of WORDS) {
    const piece = SPACE + word
    for (let end = 2; end <= piece.length; end++) {
      const prefix = piece.slice(0, end)
      if (!seen.has(prefix)) {
        seen.add(prefix)
        pieces.push(prefix)
      }
    }
  }
  pieces.forEach((text, rank) => tokens.push({text, score: -rank, type: TOKEN_TYPE.NORMAL}))
  return tokens
}

const CONSONANTS = 'bdfgklmnprstvz'
const VOWELS = 'aeiou'
const SYLLABLES = [...CONSONANTS].flatMap((consonant) => [...VOWELS].map((vowel) => consonant + vowel))

/** All two-syllable pseudo-words, then all three-syllable ones, and so on, in a fixed order. */
function* pseudoWords(): Generator<string> {
  for (let syllableCount = 2; ; syllableCount++) {
    const total = SYLLABLES.length ** syllableCount
    for (let index = 0; index < total; index++) {
      let word = ''
      for (let rest = index, i = 0; i < syllableCount; i++, rest = Math.floor(rest / SYLLABLES.length))
        word += SYLLABLES[rest % SYLLABLES.length]
      yield word
    }
  }
}
