/**
 * The wire shapes of the Anthropic routes' answers, for the OpenAPI document: `Message`, the stream's events,
 * `ModelInfo` and its list, as anthropic.ts fills them (every field of the SDK's types, null where the service has
 * nothing to say), and `modelInfo`, which fills ModelInfo.
 */
import type {KernelApi, ModelHandle} from 'service-toolkit'

/** A running chat model as Anthropic's `ModelInfo`. */
export function modelInfo(model: ModelHandle) {
  const {context_length: contextLength, created} = model.description as {created?: number; context_length?: number | null}
  return {
    capabilities: null,
    created_at: new Date((created ?? 0) * 1000).toISOString(),
    deprecated_at: null,
    display_name: model.modelName,
    id: model.uid,
    lifecycle: 'active',
    line: null,
    max_input_tokens: contextLength ?? null,
    max_tokens: contextLength ?? null,
    retires_at: null,
    type: 'model',
  }
}

export function anthropicResponseSchemas(s: KernelApi['schema']) {
  const nothing = s.nullable(s.unknown())
  const count = s.integer({minimum: 0})
  const usageFields = {cache_creation_input_tokens: count, cache_read_input_tokens: count, input_tokens: count, output_tokens: count, output_tokens_details: nothing, server_tool_use: nothing}
  const usage = s.object(
    {...usageFields, cache_creation: nothing, inference_geo: nothing, service_tier: s.string(), speed: nothing},
    {title: 'AnthropicUsage'},
  )
  const textBlock = s.object({citations: nothing, text: s.string(), type: s.literal('text')}, {title: 'AnthropicTextBlock'})
  const toolUseBlock = s.object(
    {caller: s.object({type: s.literal('direct')}), id: s.string(), input: s.unknown({description: "The tool's input, as the model wrote it."}), name: s.string(), type: s.literal('tool_use')},
    {title: 'AnthropicToolUseBlock'},
  )
  const thinkingBlock = s.object(
    {signature: s.string({description: 'Empty: this service does not sign the reasoning it returns.'}), thinking: s.string(), type: s.literal('thinking')},
    {title: 'AnthropicThinkingBlock'},
  )
  const block = s.union([thinkingBlock, textBlock, toolUseBlock], 'a thinking, text or tool_use block')
  const stop = {
    stop_reason: s.nullable(s.string({enum: ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use']})),
    stop_sequence: s.nullable(s.string()),
  }
  const message = s.object(
    {
      ...stop,
      container: nothing,
      content: s.array(block),
      diagnostics: nothing,
      id: s.string(),
      model: s.string(),
      role: s.literal('assistant'),
      stop_details: nothing,
      type: s.literal('message'),
      usage,
    },
    {title: 'AnthropicMessage'},
  )
  const event = <T extends string>(type: T, fields: Parameters<typeof s.object>[0] = {}) => s.object({...fields, type: s.literal(type)}, {title: `Anthropic_${type}`})
  const index = s.integer({minimum: 0})
  const events = s.union(
    [
      event('message_start', {message}),
      event('ping'),
      event('content_block_start', {content_block: block, index}),
      event('content_block_delta', {
        delta: s.union(
          [
            s.object({thinking: s.string(), type: s.literal('thinking_delta')}),
            s.object({signature: s.string(), type: s.literal('signature_delta')}),
            s.object({text: s.string(), type: s.literal('text_delta')}),
            s.object({partial_json: s.string(), type: s.literal('input_json_delta')}),
          ],
          'a thinking, signature, text or input JSON delta',
        ),
        index,
      }),
      event('content_block_stop', {index}),
      event('message_delta', {delta: s.object({...stop, container: nothing, stop_details: nothing}), usage: s.object(usageFields)}),
      event('message_stop'),
    ],
    'a Messages stream event',
    {description: 'Each event is sent as `event: <type>` with its JSON as `data:`; an error after the stream began comes as `event: error`.'},
  )
  const modelInfo = s.object(
    {
      capabilities: nothing,
      created_at: s.string({description: 'RFC 3339 time it was launched.'}),
      deprecated_at: nothing,
      display_name: s.string(),
      id: s.string(),
      lifecycle: s.string(),
      line: nothing,
      max_input_tokens: s.nullable(s.integer()),
      max_tokens: s.nullable(s.integer()),
      retires_at: nothing,
      type: s.literal('model'),
    },
    {title: 'AnthropicModelInfo'},
  )
  return {
    count: s.object({input_tokens: count}, {title: 'AnthropicMessageTokensCount'}),
    events,
    message,
    modelInfo,
    models: s.object({data: s.array(modelInfo), first_id: s.nullable(s.string()), has_more: s.boolean(), last_id: s.nullable(s.string())}, {title: 'AnthropicModelList'}),
  }
}
