// @ts-check
/**
 * The __ENGINE_NAME__ engine. The service runs this module in a child process of its own for each model
 * launched on the engine: `load()` is called once with the model's file and launch parameters, then each
 * request calls one of the returned operations. A crash here ends only this model's process.
 *
 * This demo engine "runs" a model by streaming the last user message back word by word. Replace the body of
 * `load()` with your engine: load the weights from request.modelPath, and make `chat` and `complete` yield
 * GenerationEvents: optionally first {type: 'start', promptTokens} once the request is accepted, then any number of
 * {type: 'text'} events, then exactly one {type: 'done'}.
 */
import {stat} from 'node:fs/promises'
import {setTimeout as sleep} from 'node:timers/promises'

/**
 * @typedef {import('service-toolkit').GenerationEvent} GenerationEvent
 */

/**
 * Words with the whitespace before each, so that the streamed pieces join back into the original text.
 * @param {string} text
 */
const words = (text) => text.match(/\s*\S+/g) ?? []

/**
 * @param {string} text what to stream back
 * @param {number} promptTokens
 * @param {number | undefined} maxTokens
 * @param {number} delay milliseconds before each word
 * @param {AbortSignal} signal aborted when the client goes away; stop working as soon as it is
 * @returns {AsyncGenerator<GenerationEvent>}
 */
async function* streamWords(text, promptTokens, maxTokens, delay, signal) {
  const all = words(text)
  const emitted = all.slice(0, maxTokens ?? all.length)
  for (const [index, word] of emitted.entries()) {
    if (delay > 0) await sleep(delay, undefined, {signal}).catch(() => {})
    if (signal.aborted) {
      yield {type: 'done', finishReason: 'abort', promptTokens, completionTokens: index}
      return
    }

    yield {type: 'text', text: word}
  }

  yield {type: 'done', finishReason: emitted.length < all.length ? 'length' : 'stop', promptTokens, completionTokens: emitted.length}
}

/**
 * The LLM model type's operations (`chat`, `complete`, `count_tokens`) with the payload each takes and the events each
 * yields: the type checker holds `operations` below to them.
 * @type {import('service-toolkit').EngineHost<import('service-toolkit').LlmOperations>}
 */
const host = {
  async load(request, {errors, log}) {
    // request.modelPath is the local file of the weights (for split GGUF, the first part); request.spec,
    // request.family and request.parameters say what was launched and how.
    const {size} = await stat(request.modelPath)
    const delay = Number(request.parameters.delay_ms ?? 0)
    log.info(`__ENGINE_NAME__ loaded ${request.modelPath} (${size} bytes) for ${request.modelUid}`)

    return {
      // Shown on the model (`servicectl list`); `abilities` replaces the family's model_ability.
      info: {abilities: ['chat', 'generate'], contextLength: request.family.context_length ?? 4096},
      operations: {
        chat({maxTokens, messages}, signal) {
          const lastUserMessage = messages.findLast((message) => message.role === 'user')?.content ?? ''
          const promptTokens = messages.reduce((sum, message) => sum + words(message.content).length, 0)
          return streamWords(lastUserMessage, promptTokens, maxTokens, delay, signal)
        },
        complete({maxTokens, prompt}, signal) {
          // A prompt may also come as token ids of the model's vocabulary; this demo has no vocabulary. An error made
          // by the kernel's factory reaches the client as that HTTP error (here a 400 naming the field).
          if (typeof prompt !== 'string') throw errors.badRequest('this engine takes text prompts only', 'prompt')
          return streamWords(prompt, words(prompt).length, maxTokens, delay, signal)
        },
      },
      // Free memory, close files and handles; the process exits right after.
      async dispose() {},
    }
  },
}

export default host
