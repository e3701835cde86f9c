// @ts-check
/**
 * The reference engine of the __MODEL_TYPE__ model type: the smallest engine that implements the type's
 * `infer` operation (see InferPayload and InferEvent in register.js). The service runs it in a child process
 * of its own per launched model. It counts the characters and words of its input; a real engine would load
 * weights from request.modelPath and run them.
 */
import {stat} from 'node:fs/promises'

/**
 * @typedef {import('./register.js').InferPayload} InferPayload
 * @typedef {import('./register.js').InferEvent} InferEvent
 */

/** @type {import('service-toolkit').EngineHost} */
const host = {
  async load(request, {log}) {
    const {size} = await stat(request.modelPath)
    log.info(`__SLUG__-reference loaded ${request.modelPath} (${size} bytes) for ${request.modelUid}`)
    return {
      info: {abilities: ['infer']},
      operations: {
        /** @returns {AsyncGenerator<InferEvent>} */
        async *infer(payload) {
          const {input} = /** @type {InferPayload} */ (payload)
          yield {type: 'result', output: {characters: input.length, words: input.split(/\s+/).filter(Boolean).length}}
        },
      },
      async dispose() {},
    }
  },
}

export default host
