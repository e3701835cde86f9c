/** Runs a plugin module's default export in a child process of its own and answers what it returned. */
import {fileURLToPath} from 'node:url'

import type {IsolatedAnswer} from './isolated-host.js'

import {ServiceError} from '../kernel/errors.js'
import {checkChannelNesting} from './messages.js'

const HOST_ENTRY = fileURLToPath(new URL('isolated-host.js', import.meta.url))

export async function runIsolated<T>(module: string, input: unknown, {signal, timeoutMs = 120_000}: {signal?: AbortSignal; timeoutMs?: number} = {}): Promise<T> {
  checkChannelNesting(input, `the input to ${module}`, 400)
  const {execaNode} = await import('execa')
  const child = execaNode(HOST_ENTRY, [], {cancelSignal: signal, ipc: true, reject: false, serialization: 'advanced', stderr: 'pipe', stdin: 'ignore', stdout: 'ignore', timeout: timeoutMs})
  try {
    await child.sendMessage({input, module} as never)
    const message = (await child.getOneMessage()) as unknown as IsolatedAnswer
    if (message.type === 'error') throw new ServiceError(message.error.status, message.error.code, message.error.message)
    return message.result as T
  } catch (error) {
    if (error instanceof ServiceError) throw error
    const result = await child
    const detail = String(result.stderr ?? '').trim().split('\n').slice(-3).join(' | ')
    throw new ServiceError(500, 'internal_error', `${module} stopped without an answer (${result.timedOut ? `timed out after ${timeoutMs / 1000} s` : (result.signal ?? `exit code ${result.exitCode}`)})${detail ? `: ${detail}` : ''}`)
  } finally {
    child.kill()
    await child
  }
}
