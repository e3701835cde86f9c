/**
 * Ollama's `POST /api/pull` and `DELETE /api/delete` on the service's weights cache. Ollama's model names are the
 * catalogue's, and the tag, when there is one other than `latest`, is the quantization (`tiny-random-llm:q4_0`); the
 * weights are those llama.cpp would load, as Ollama's models are GGUF. A pull answers Ollama's NDJSON progress: the
 * manifest, then one line per file as it downloads (its name as the digest: the service has no Ollama blob digests),
 * then success; `stream: false` answers only the last.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {LaunchRequest} from '../../protocol/launch.js'
import type {ModelService, ModelWeights} from '../../protocol/services.js'
import type {DownloadProgress} from '../../protocol/worker.js'

import {badRequest} from '../../kernel/errors.js'
import * as s from '../../kernel/schema.js'

export interface OllamaPullRouteDependencies {
  supervisor: ModelService
  weights: ModelWeights
}

const NDJSON = 'application/x-ndjson'
const json = (body: unknown) => ({body, kind: 'json' as const})
const NAME = {description: "A catalogue model name; a tag other than `latest` is the quantization (`tiny-random-llm:q4_0`).", maxLength: 256, minLength: 1}

const nameFields = {model: s.optional(s.string(NAME)), name: s.optional(s.string({...NAME, description: 'The older name of `model`.'}))}
const pullSchema = s.object(
  {
    ...nameFields,
    insecure: s.optional(s.boolean({description: 'Accepted and not used: the weights come from the hub the service is set to, over its own connections.'})),
    stream: s.optional(s.boolean({description: 'Stream NDJSON progress (the default) or answer one object at the end.'})),
  },
  {title: 'OllamaPullRequest'},
)
const deleteSchema = s.object(nameFields, {title: 'OllamaDeleteRequest'})

/** The launch whose weights an Ollama model name stands for. */
function launchOf({model, name}: {model?: string; name?: string}): LaunchRequest {
  const given = model ?? name
  if (given === undefined) throw badRequest('`model` is required: the catalogue name of the model, with its quantization as the tag if you want one.', 'model')
  const [modelName, tag] = given.split(':', 2)
  if (!modelName) throw badRequest('`model` names no model before its tag.', 'model')
  return {model_engine: 'llama.cpp', model_name: modelName, ...(tag && tag !== 'latest' ? {quantization: tag} : {})}
}

/** The NDJSON lines of a pull: what the download reports, as it reports it, until it ends. */
function progressLines() {
  const pending: Array<Record<string, unknown>> = []
  const completed = new Map<string, number>()
  let wake: (() => void) | undefined
  const push = (line: Record<string, unknown>) => {
    pending.push(line)
    wake?.()
  }

  const onProgress = ({files}: DownloadProgress) => {
    for (const file of files) {
      if (completed.get(file.name) === file.downloadedBytes) continue
      completed.set(file.name, file.downloadedBytes)
      const line = {completed: file.downloadedBytes, digest: file.name, status: `downloading ${file.name}`, total: file.totalBytes}
      // A client reading slower than the download gets the latest count, not every one: what waits stays one line a file.
      const waiting = pending.findIndex((queued) => queued.digest === file.name)
      if (waiting === -1) push(line)
      else pending[waiting] = line
    }
  }

  const follow = (done: Promise<void>) =>
    done.then(
      () => push({status: 'success'}),
      (error: Error) => push({error: error.message}),
    )

  async function* lines(): AsyncGenerator<Uint8Array> {
    const encoder = new TextEncoder()
    yield encoder.encode(`${JSON.stringify({status: 'pulling manifest'})}\n`)
    for (;;) {
      while (pending.length > 0) {
        const line = pending.shift()!
        yield encoder.encode(`${JSON.stringify(line)}\n`)
        if ('error' in line || line.status === 'success') return
      }

      await new Promise<void>((resolve) => (wake = resolve))
      wake = undefined
    }
  }

  return {follow, lines, onProgress}
}

export function ollamaPullRoutes({supervisor, weights}: OllamaPullRouteDependencies): RouteDefinition[] {
  const routes: Array<RouteDefinition<any>> = [
    {
      body: pullSchema,
      errorStyle: 'ollama',
      example: {body: {model: 'tiny-random-llm', stream: false}},
      async handler({authority, body, signal}) {
        const progress = progressLines()
        // Resolved before answering: an unknown model or quantization is a 4xx, not a line in a stream already begun.
        const {done} = weights.pull(launchOf(body), {authority, onProgress: progress.onProgress, signal})
        if (body.stream === false) {
          await done
          return json({status: 'success'})
        }

        progress.follow(done)
        return {body: progress.lines(), contentType: NDJSON, kind: 'bytes' as const}
      },
      method: 'POST',
      path: '/api/pull',
      permission: 'models:start',
      produces: ['application/json', NDJSON],
      summary: "Ollama: download a catalogue model's GGUF weights into the cache (NDJSON progress, or one object with stream false)",
      tag: 'ollama',
    },
    {
      body: deleteSchema,
      errorStyle: 'ollama',
      example: {body: {model: 'tiny-random-llm'}},
      async handler({authority, body}) {
        await supervisor.removeCachedModel(weights.version(launchOf(body), {authority}))
        return json(null)
      },
      method: 'DELETE',
      path: '/api/delete',
      permission: 'admin',
      response: {type: 'null'},
      summary: "Ollama: delete a model's GGUF weights from the cache (refused while a model running or launching uses them)",
      tag: 'ollama',
    },
  ]
  return routes
}
