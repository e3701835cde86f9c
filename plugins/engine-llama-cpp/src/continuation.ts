/**
 * A reply that continues the conversation's last assistant text (a prefill) starts mid-text. node-llama-cpp's LlamaChat
 * reads a reply's first token alone, which drops the space an SPM tokenizer (Llama 2, Mistral, Gemma) puts before a
 * word: right for a turn of its own, which should not start with a space, but after a prefill that space separates
 * the answer's first word from the prefill's last, and belongs to the answer. The plain path reads the first token
 * after the prompt's end instead (see plain-generation.ts).
 */
import type {LlamaModel, Token} from 'node-llama-cpp'

/** As many tokens as the plain path reads a piece after. */
const CONTEXT = 4

/**
 * LlamaChat's `onToken` and `onTextChunk` for a continued reply: the first text gets back the space its first token
 * carries after the prompt.
 */
export function continuedTextCallbacks(model: LlamaModel, prompt: readonly Token[], onText: (text: string) => void) {
  let first: Token | undefined
  let started = false
  return {
    onTextChunk(text: string) {
      if (!started && text && first !== undefined) {
        started = true
        const dropped = model.detokenize([first], false, prompt.slice(-CONTEXT)).startsWith(' ') && !model.detokenize([first]).startsWith(' ')
        if (dropped && !text.startsWith(' ')) text = ` ${text}`
      }

      onText(text)
    },
    onToken(tokens: Token[]) {
      first ??= tokens[0]
    },
  }
}
