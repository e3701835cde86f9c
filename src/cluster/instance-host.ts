/**
 * Entry point of a model instance's own child process. It loads the engine's host module, loads the model
 * once, then serves operations over IPC until told to dispose or until its parent goes away. Anything that
 * goes wrong in here kills only this process; the worker reports it on the model.
 */
import {pathToFileURL} from 'node:url'

import type {EngineHost, LoadedModel, Logger} from '../kernel/contracts.js'
import type {FromInstance, RequestMessage, ToInstance} from './protocol.js'

import {toServiceError} from '../kernel/errors.js'

const send = (message: FromInstance) =>
  new Promise<void>((resolve) => {
    if (!process.connected) return resolve()
    process.send!(message, undefined, undefined, () => resolve())
  })

// Model processes log to stderr; the worker appends it to the model's log file.
const log: Logger = {
  debug: (m) => process.env.SERVICE_LOG_LEVEL === 'debug' && process.stderr.write(`debug ${m}\n`),
  error: (m) => process.stderr.write(`error ${m}\n`),
  info: (m) => process.stderr.write(`info ${m}\n`),
  warn: (m) => process.stderr.write(`warn ${m}\n`),
}

let model: LoadedModel | undefined
const running = new Map<number, AbortController>()
const lifetime = new AbortController()

async function load(message: Extract<ToInstance, {type: 'load'}>) {
  try {
    const module = await import(message.hostModule.startsWith('file:') ? message.hostModule : pathToFileURL(message.hostModule).href)
    const host = (module.default ?? module) as EngineHost
    if (typeof host.load !== 'function') throw new Error(`engine host module ${message.hostModule} exports no load()`)
    let reported = 0
    // llama.cpp reports every tensor; one message per percent is plenty for a progress bar.
    const progress = (fraction: number) => {
      if (fraction < 1 && fraction - reported < 0.01) return
      reported = fraction
      void send({fraction, type: 'load-progress'})
    }

    model = await host.load(message.request, {log, progress, signal: lifetime.signal})
    await send({info: model.info, operations: Object.keys(model.operations), type: 'ready'})
  } catch (error) {
    const shaped = toServiceError(error)
    // The real cause matters most on a failed load (a bad GGUF, not enough memory), so it is kept verbatim.
    const message = shaped.status === 500 ? (error as Error)?.message ?? String(error) : shaped.message
    log.error(`load failed: ${(error as Error)?.stack ?? error}`)
    await send({error: {code: shaped.status === 500 ? 'launch_failed' : shaped.code, message, status: shaped.status === 500 ? 500 : shaped.status}, type: 'load-failed'})
    process.exit(1)
  }
}

/**
 * Every request's messages go through one outbox, sent on the next event-loop turn as one IPC message, and
 * while a send is in flight the next ones gather: concurrent streams then cost one IPC round per decode step
 * instead of one per token per stream. Waiting for the next turn also lets the engine start its next decode
 * (on another thread) before this thread spends time sending.
 */
let outbox: RequestMessage[] = []
let sending: Promise<void> | undefined

function post(message: RequestMessage): Promise<void> {
  outbox.push(message)
  sending ??= (async () => {
    await new Promise((resolve) => setImmediate(resolve))
    while (outbox.length > 0) {
      const messages = outbox
      outbox = []
      await send(messages.length === 1 ? messages[0] : {messages, type: 'batch'})
    }

    sending = undefined
  })()
  return sending
}

async function invoke(message: Extract<ToInstance, {type: 'invoke'}>) {
  const controller = new AbortController()
  running.set(message.id, controller)
  try {
    const operation = model?.operations[message.operation]
    if (!operation) throw Object.assign(new Error(`this model does not support "${message.operation}"`), {code: 'unsupported', status: 400})
    for await (const event of operation(message.payload, controller.signal)) void post({event, id: message.id, type: 'event'})
    await post({id: message.id, type: 'end'})
  } catch (error) {
    if (toServiceError(error).status === 500) log.error(`${message.operation} failed: ${(error as Error)?.stack ?? error}`)
    await post({error: toServiceError(error).toJSON(), id: message.id, type: 'error'})
  } finally {
    running.delete(message.id)
  }
}

async function dispose() {
  lifetime.abort()
  for (const controller of running.values()) controller.abort()
  await model?.dispose()
  await sending
  await send({type: 'disposed'})
  process.exit(0)
}

process.on('message', (message: ToInstance) => {
  switch (message.type) {
    case 'load': {
      void load(message)
      break
    }

    case 'invoke': {
      void invoke(message)
      break
    }

    case 'abort': {
      running.get(message.id)?.abort()
      break
    }

    case 'dispose': {
      void dispose()
      break
    }
  }
})

// An orphaned model process must not keep holding memory after its worker died.
process.on('disconnect', () => process.exit(0))
