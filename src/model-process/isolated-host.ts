/**
 * Entry point of a short-lived child process that runs one function of a plugin module (such as an engine's
 * memory estimator) and exits, so native code it loads can never take the service down.
 */
import {pathToFileURL} from 'node:url'

import {errorFactory, toServiceError} from '../kernel/errors.js'
import {checkChannelNesting} from './messages.js'

export interface IsolatedCall {
  module: string
  input: unknown
}

export type IsolatedAnswer = {type: 'result'; result: unknown} | {type: 'error'; error: {status: number; code: string; message: string}}

const answer = (message: IsolatedAnswer) => new Promise<void>((resolve) => process.send!(message, undefined, undefined, () => resolve()))

process.once('message', async ({input, module}: IsolatedCall) => {
  try {
    const loaded = await import(module.startsWith('file:') ? module : pathToFileURL(module).href)
    const run = loaded.default as (input: unknown, context: {errors: typeof errorFactory}) => Promise<unknown>
    if (typeof run !== 'function') throw new Error(`${module} has no default export to run`)
    const result = await run(input, {errors: errorFactory})
    checkChannelNesting(result, `the answer of ${module}`, 500)
    await answer({result, type: 'result'})
  } catch (error) {
    const shaped = toServiceError(error)
    // A plain Error here is the plugin's own explanation (a file it cannot parse, a hub it cannot reach).
    const message = shaped.status === 500 ? ((error as Error)?.message ?? String(error)) : shaped.message
    await answer({error: {code: shaped.status === 500 ? 'internal_error' : shaped.code, message, status: shaped.status === 500 ? 500 : shaped.status}, type: 'error'})
  }

  process.exit(0)
})

process.on('disconnect', () => process.exit(0))
