/**
 * `POST /v1/embeddings`, the OpenAI embeddings API: one L2-normalized vector per input, as floats or as base64 of
 * little-endian float32 (what the `openai` client asks for by default and decodes itself).
 */
import type {EmbeddingOperations, Infer, KernelApi, RouteDefinition, TextInput} from 'service-toolkit'

/** OpenAI's own limit on inputs per request. */
const MAX_INPUTS = 2048

function embeddingSchema(s: KernelApi['schema']) {
  const tokens = s.array(s.integer({minimum: 0}), {minItems: 1})
  return s.object(
    {
      dimensions: s.optional(s.integer({description: 'Shorter vectors, for models trained to allow them (Matryoshka).', minimum: 1})),
      encoding_format: s.optional(s.string({description: 'float (default) or base64 of little-endian float32.', enum: ['float', 'base64']})),
      input: s.union(
        [s.string(), tokens, s.array(s.union([s.string(), tokens], 'a string or an array of token ids'), {maxItems: MAX_INPUTS, minItems: 1})],
        `a string, an array of token ids, or an array of 1 to ${MAX_INPUTS} inputs, each a string or an array of token ids`,
      ),
      keep_alive: s.optional(s.keepAlive({description: 'Extension (Ollama\'s): how long the model stays loaded once idle, a duration such as "5m" or seconds; -1 keeps it loaded, 0 unloads it after this request.'})),
      model: s.string({description: 'Uid of a running embedding model.', minLength: 1}),
      user: s.optional(s.string()),
    },
    {title: 'CreateEmbeddingRequest'},
  )
}

type EmbeddingRequest = Infer<ReturnType<typeof embeddingSchema>>

function embeddingResponseSchema(s: KernelApi['schema']) {
  const embedding = s.object(
    {
      embedding: s.union([s.array(s.number()), s.string({description: 'Base64 of little-endian float32, with encoding_format base64.'})], 'a vector or its base64'),
      index: s.integer({minimum: 0}),
      object: s.literal('embedding'),
    },
    {title: 'Embedding'},
  )
  return s.object(
    {
      data: s.array(embedding, {description: 'One L2-normalized vector per input, in the order of the inputs.'}),
      model: s.string(),
      object: s.literal('list'),
      usage: s.object({prompt_tokens: s.integer({minimum: 0}), total_tokens: s.integer({minimum: 0})}),
    },
    {title: 'CreateEmbeddingResponse'},
  )
}

/** `[1, 2]` is one input of two tokens, `[[1], "text"]` two inputs. */
function inputsOf(input: EmbeddingRequest['input']): TextInput[] {
  if (typeof input === 'string') return [input]
  if (input.every((item) => typeof item === 'number')) return [input as number[]]
  return input as TextInput[]
}

const base64Of = (vector: number[]) => Buffer.from(Float32Array.from(vector).buffer).toString('base64')

export function embeddingsRoute(api: KernelApi): RouteDefinition<EmbeddingRequest> {
  return {
    body: embeddingSchema(api.schema),
    example: {body: {input: ['The cat sat on the mat.', 'A dog barked.'], model: 'tiny-random-embedding'}},
    async handler({body, models, signal}) {
      const model = models.get<EmbeddingOperations>(body.model)
      api.requireAbility(model, 'embed', 'create embeddings')
      const inputs = inputsOf(body.input)
      const empty = inputs.findIndex((input) => typeof input === 'string' && input.trim() === '')
      if (empty >= 0) {
        const param = inputs.length === 1 ? 'input' : `input[${empty}]`
        throw api.errors.badRequest(`\`${param}\` is empty; every input needs some text.`, param)
      }

      const vectors: number[][] = []
      let promptTokens = 0
      for await (const event of model.invoke('embed', {dimensions: body.dimensions, inputs}, signal)) {
        if (event.type === 'embedding') vectors[event.index] = event.vector
        else promptTokens = event.promptTokens
      }

      const encode = body.encoding_format === 'base64' ? base64Of : (vector: number[]) => vector
      return {
        body: {
          data: vectors.map((vector, index) => ({embedding: encode(vector), index, object: 'embedding'})),
          model: body.model,
          object: 'list',
          usage: {prompt_tokens: promptTokens, total_tokens: promptTokens},
        },
        kind: 'json',
      }
    },
    method: 'POST',
    path: '/v1/embeddings',
    permission: 'models:read',
    response: embeddingResponseSchema(api.schema).json,
    summary: 'Embeddings (OpenAI API): one vector per input; encoding_format float or base64, dimensions for Matryoshka models',
    tag: 'embedding',
  }
}
