/**
 * Ollama's embedding API: `POST /api/embed` (inputs in, L2-normalized vectors out, as Ollama answers) and its older
 * `POST /api/embeddings` (one prompt, one vector), so tools speaking only Ollama embed with the service's models.
 */
import type {EmbeddingOperations, Infer, KernelApi, ModelHandle, RouteDefinition} from 'service-toolkit'

/** As many inputs as the OpenAI route takes. */
const MAX_INPUTS = 2048

function embedSchema(s: KernelApi['schema']) {
  return s.object(
    {
      dimensions: s.optional(s.integer({description: 'Shorter vectors, for models trained to allow them (Matryoshka).', minimum: 1})),
      input: s.union([s.string(), s.array(s.string(), {maxItems: MAX_INPUTS, minItems: 1})], `a string, or an array of 1 to ${MAX_INPUTS} strings`),
      keep_alive: s.optional(s.keepAlive()),
      model: s.string({description: 'Uid of a running embedding model.', minLength: 1}),
      options: s.optional(s.record(s.unknown(), {description: "Ollama's model options: accepted and ignored for embeddings."})),
      truncate: s.optional(s.boolean({description: 'Only true (the default) is supported: an input longer than the model\'s context is refused either way.'})),
    },
    {title: 'OllamaEmbedRequest'},
  )
}

function embeddingsSchema(s: KernelApi['schema']) {
  return s.object(
    {
      keep_alive: s.optional(s.keepAlive()),
      model: s.string({description: 'Uid of a running embedding model.', minLength: 1}),
      options: s.optional(s.record(s.unknown(), {description: "Ollama's model options: accepted and ignored for embeddings."})),
      prompt: s.string({description: 'The text to embed.'}),
    },
    {title: 'OllamaEmbeddingsRequest'},
  )
}

type EmbedRequest = Infer<ReturnType<typeof embedSchema>>
type EmbeddingsRequest = Infer<ReturnType<typeof embeddingsSchema>>

async function embed(api: KernelApi, model: ModelHandle<EmbeddingOperations>, inputs: string[], dimensions: number | undefined, signal: AbortSignal) {
  api.requireAbility(model, 'embed', 'create embeddings')
  const empty = inputs.findIndex((input) => input.trim() === '')
  if (empty >= 0) {
    const param = inputs.length === 1 ? 'input' : `input[${empty}]`
    throw api.errors.badRequest(`\`${param}\` is empty; every input needs some text.`, param)
  }

  const vectors: number[][] = []
  let promptTokens = 0
  for await (const event of model.invoke('embed', {dimensions, inputs}, signal)) {
    if (event.type === 'embedding') vectors[event.index] = event.vector
    else promptTokens = event.promptTokens
  }

  return {promptTokens, vectors}
}

export function ollamaEmbeddingRoutes(api: KernelApi): RouteDefinition[] {
  const embedRoute: RouteDefinition<EmbedRequest> = {
    body: embedSchema(api.schema),
    errorStyle: 'ollama',
    async handler({body, models, signal}) {
      if (body.truncate === false) throw api.errors.create(400, 'unsupported', 'only `truncate: true` is supported; leave it out.', 'truncate')
      const startedAt = process.hrtime.bigint()
      const inputs = typeof body.input === 'string' ? [body.input] : body.input
      const {promptTokens, vectors} = await embed(api, models.get<EmbeddingOperations>(body.model), inputs, body.dimensions, signal)
      return {body: {embeddings: vectors, load_duration: 0, model: body.model, prompt_eval_count: promptTokens, total_duration: Number(process.hrtime.bigint() - startedAt)}, kind: 'json'}
    },
    example: {body: {input: ['first text', 'second text'], model: 'tiny-random-embedding'}},
    method: 'POST',
    path: '/api/embed',
    permission: 'models:read',
    summary: 'Ollama: embeddings of one or more inputs',
    tag: 'ollama',
  }

  const embeddingsRoute: RouteDefinition<EmbeddingsRequest> = {
    body: embeddingsSchema(api.schema),
    errorStyle: 'ollama',
    async handler({body, models, signal}) {
      const {vectors} = await embed(api, models.get<EmbeddingOperations>(body.model), [body.prompt], undefined, signal)
      return {body: {embedding: vectors[0]}, kind: 'json'}
    },
    example: {body: {model: 'tiny-random-embedding', prompt: 'first text'}},
    method: 'POST',
    path: '/api/embeddings',
    permission: 'models:read',
    summary: "Ollama (older API): the embedding of one prompt",
    tag: 'ollama',
  }

  return [embedRoute, embeddingsRoute]
}
