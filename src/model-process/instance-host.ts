/**
 * Entry point of a model instance's own child process. It loads the engine's host module, loads the model
 * once, then serves operations over IPC until told to dispose or until its parent goes away. Anything that
 * goes wrong in here kills only this process; the worker reports it on the model.
 */
import {pathToFileURL} from 'node:url'

import type {EngineHost, LoadedModel, LoadRequest, Logger} from '../kernel/contracts.js'
import type {FromInstance, ToInstance} from './messages.js'

import {errorFactory, toServiceError} from '../kernel/errors.js'
import {joinGenerationEvents} from '../kernel/generation.js'
import {relayedOperation, withReasoningAbilities} from '../kernel/reasoning.js'
import {withRequestId} from '../kernel/request-context.js'
import {createLogger} from '../util/logger.js'
import {checkChannelNesting} from './messages.js'
import {Outbox, streamInterval} from './outbox.js'

const send = (message: FromInstance) =>
  new Promise<void>((resolve) => {
    if (!process.connected) return resolve()
    process.send!(message, undefined, undefined, () => resolve())
  })

// Model processes log to stderr, in the service's format; the worker appends it to the model's log file. Below
// debug, the model's info lines are kept whatever the service's level: they are the model's whole story.
const log: Logger = createLogger({
  format: process.env.SERVICE_LOG_FORMAT === 'json' ? 'json' : 'text',
  level: process.env.SERVICE_LOG_LEVEL === 'debug' ? 'debug' : 'info',
  name: 'model',
})

let model: LoadedModel | undefined
let loaded: LoadRequest | undefined
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

    model = await host.load(message.request, {cacheDir: message.cacheDir, errors: errorFactory, log, progress, signal: lifetime.signal})
    loaded = message.request
    const abilities = withReasoningAbilities(model.info.abilities, message.request)
    await send({info: {...model.info, ...(abilities ? {abilities} : {})}, operations: Object.keys(model.operations), type: 'ready'})
    reportUsage(model)
  } catch (error) {
    const shaped = toServiceError(error)
    // The real cause matters most on a failed load (a bad GGUF, not enough memory), so it is kept verbatim.
    const message = shaped.status === 500 ? (error as Error)?.message ?? String(error) : shaped.message
    log.error(`load failed: ${(error as Error)?.stack ?? error}`)
    await send({error: {code: shaped.status === 500 ? 'launch_failed' : shaped.code, message, param: shaped.param, status: shaped.status === 500 ? 500 : shaped.status}, type: 'load-failed'})
    process.exit(1)
  }
}

/** How often the engine's usage is read; a change is sent to the worker, which the metrics read when scraped. */
const USAGE_INTERVAL_MS = 250

function reportUsage(loaded: LoadedModel) {
  if (!loaded.usage) return
  let last = ''
  const timer = setInterval(() => {
    const usage = loaded.usage!()
    const text = JSON.stringify(usage)
    if (text === last) return
    last = text
    void send({type: 'usage', usage})
  }, USAGE_INTERVAL_MS)
  timer.unref()
  lifetime.signal.addEventListener('abort', () => clearInterval(timer), {once: true})
}

const outbox = new Outbox(send, streamInterval(process.env, (message) => log.warn(message)), undefined, joinGenerationEvents)

/** Runs an operation as part of its request, so the engine's log lines about it carry the request's id. */
const invokeFor = (message: Extract<ToInstance, {type: 'invoke'}>) => (message.requestId === undefined ? invoke(message) : withRequestId(message.requestId, () => invoke(message)))

async function invoke(message: Extract<ToInstance, {type: 'invoke'}>) {
  const controller = new AbortController()
  running.set(message.id, controller)
  try {
    const operation = model?.operations[message.operation]
    if (!operation) throw errorFactory.create(400, 'unsupported', `this model does not support "${message.operation}"`)
    const events = relayedOperation(loaded!, message.operation, message.payload, (payload) => operation(payload, controller.signal))
    for await (const event of events) {
      checkChannelNesting(event, `the model's answer to ${message.operation}`, 500)
      outbox.post({event, id: message.id, type: 'event'})
    }

    outbox.post({id: message.id, type: 'end'})
  } catch (error) {
    if (toServiceError(error).status === 500) log.error(`${message.operation} failed: ${(error as Error)?.stack ?? error}`)
    outbox.post({error: toServiceError(error).toJSON(), id: message.id, type: 'error'})
  } finally {
    running.delete(message.id)
  }
}

async function dispose() {
  lifetime.abort()
  for (const controller of running.values()) controller.abort()
  await model?.dispose()
  await outbox.flush()
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
      void invokeFor(message)
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
