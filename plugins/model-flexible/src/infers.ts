/**
 * `POST /v1/flexible/infers`, Xinference's call of a flexible model: `{model, args, ...kwargs}` runs the model's
 * `infer(*args, **kwargs)` and answers with its JSON, as it is: an engine that writes its answer as JSON text (ONNX
 * Runtime's) has that text sent without being parsed and written again.
 */
import type {FlexibleOperations, FlexibleResultEvent, KernelApi, RouteDefinition} from 'service-toolkit'

function infersSchema(s: KernelApi['schema']) {
  return s.object(
    {
      args: s.optional(s.nullable(s.array(s.unknown(), {description: 'Positional arguments of the model\'s infer call (for an ONNX model, its inputs in order).'}))),
      model: s.string({description: 'Uid of a running flexible model.', minLength: 1}),
    },
    {
      description: 'Any other field is a keyword argument of the infer call (for an ONNX model, an input by name).',
      title: 'FlexibleInferRequest',
      unknownKeys: 'keep',
    },
  )
}

type InferRequest = {args?: unknown[] | null; model: string} & Record<string, unknown>

export function infersRoute(api: KernelApi): RouteDefinition<InferRequest> {
  return {
    body: infersSchema(api.schema),
    example: {body: {bias: [0.25, -0.5], model: 'my-linear', x: [[1, -1, 2]]}},
    async handler({body, models, signal}) {
      const {args, model: uid, ...kwargs} = body
      const model = models.get<FlexibleOperations>(uid)
      api.requireAbility(model, 'infer', 'run a flexible inference')
      let answer: FlexibleResultEvent | undefined
      for await (const event of model.invoke('infer', {args: args ?? [], kwargs}, signal)) answer = event
      if (answer?.json !== undefined) return {body: answer.json, headers: {'Content-Type': 'application/json; charset=utf-8'}, kind: 'json'}
      return {body: answer?.result ?? null, kind: 'json'}
    },
    method: 'POST',
    path: '/v1/flexible/infers',
    permission: 'models:read',
    response: {description: 'Whatever JSON the model answers; an ONNX model answers its outputs by name.'},
    summary: 'Run a flexible model (Xinference\'s infers call): args and keyword arguments in, the model\'s JSON out',
    tag: 'flexible',
  }
}
