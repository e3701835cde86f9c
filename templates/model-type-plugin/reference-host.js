// @ts-check
/**
 * The reference engine of the __MODEL_TYPE__ model type: the smallest engine that implements the type's
 * `infer` operation (see InferPayload and InferEvent in register.js). The service runs it in a child process
 * of its own per launched model. It counts the characters and words of its input; a real engine would load
 * weights from request.modelPath and run them.
 */
import {stat} from 'node:fs/promises'

/** @type {import('service-toolkit').EngineHost<import('./register.js').InferOperations>} */
const host = {
  async load(request, {log}) {
    const {size} = await stat(request.modelPath)
    log.info(`__SLUG__-reference loaded ${request.modelPath} (${size} bytes) for ${request.modelUid}`)
    return {
      info: {abilities: ['infer']},
      operations: {
        async *infer({input}) {
          yield {type: 'result', output: {characters: input.length, words: input.split(/\s+/).filter(Boolean).length}}
        },
      },
      async dispose() {},
    }
  },
}

export default host
