/**
 * The wire shapes of the Responses API's answers, for the OpenAPI document: `Response`, its output items, the
 * input item list and the stream's events, as responses-run.ts and responses.ts fill them.
 */
import type {KernelApi} from 'service-toolkit'

export function responsesSchemas(s: KernelApi['schema']) {
  const count = s.integer({minimum: 0})
  const status = s.string({enum: ['in_progress', 'completed', 'incomplete']})
  const outputText = s.object({annotations: s.array(s.unknown()), logprobs: s.array(s.unknown()), text: s.string(), type: s.literal('output_text')}, {title: 'ResponseOutputText'})
  const message = s.object(
    {content: s.array(outputText), id: s.string(), role: s.literal('assistant'), status, type: s.literal('message')},
    {title: 'ResponseOutputMessage'},
  )
  const functionCall = s.object(
    {arguments: s.string({description: 'JSON text of the arguments.'}), call_id: s.string(), id: s.string(), name: s.string(), status, type: s.literal('function_call')},
    {title: 'ResponseFunctionToolCall'},
  )
  const summaryText = s.object({text: s.string(), type: s.literal('summary_text')})
  const reasoning = s.object(
    {id: s.string(), summary: s.array(summaryText, {description: "The model's thinking, as the reasoning parser split it from the answer."}), type: s.literal('reasoning')},
    {title: 'ResponseReasoningItem'},
  )
  const outputItem = s.union([message, functionCall, reasoning], 'a message, function_call or reasoning item')
  const usage = s.object(
    {
      input_tokens: count,
      input_tokens_details: s.object({cache_write_tokens: count, cached_tokens: count}),
      output_tokens: count,
      output_tokens_details: s.object({reasoning_tokens: count}),
      total_tokens: count,
    },
    {title: 'ResponseUsage'},
  )
  const response = s.object(
    {
      background: s.boolean(),
      completed_at: s.nullable(s.integer()),
      created_at: s.integer({description: 'Seconds since the epoch.'}),
      error: s.nullable(s.object({code: s.string(), message: s.string()})),
      id: s.string(),
      incomplete_details: s.nullable(s.object({reason: s.string()})),
      instructions: s.nullable(s.string()),
      max_output_tokens: s.nullable(s.integer()),
      metadata: s.record(s.string()),
      model: s.string(),
      object: s.literal('response'),
      output: s.array(outputItem),
      parallel_tool_calls: s.boolean(),
      previous_response_id: s.nullable(s.string()),
      reasoning: s.object({effort: s.nullable(s.string()), summary: s.nullable(s.string())}),
      service_tier: s.string(),
      status: s.string({enum: ['completed', 'failed', 'in_progress', 'cancelled', 'queued', 'incomplete']}),
      store: s.boolean(),
      temperature: s.number(),
      text: s.object({format: s.unknown({description: 'The text.format of the request: text, json_object or json_schema.'})}),
      tool_choice: s.unknown(),
      tools: s.array(s.unknown()),
      top_p: s.number(),
      truncation: s.string(),
      usage: s.optional(usage),
      user: s.optional(s.string()),
    },
    {title: 'Response'},
  )
  const inputItem = s.object(
    {
      arguments: s.optional(s.string()),
      call_id: s.optional(s.string()),
      content: s.optional(s.array(s.object({text: s.string(), type: s.string()}, {unknownKeys: 'keep'}))),
      id: s.string(),
      name: s.optional(s.string()),
      output: s.optional(s.string()),
      role: s.optional(s.string()),
      status: s.string(),
      type: s.string({enum: ['message', 'function_call', 'function_call_output']}),
    },
    {title: 'ResponseItem'},
  )
  const itemList = s.object(
    {data: s.array(inputItem), first_id: s.nullable(s.string()), has_more: s.boolean(), last_id: s.nullable(s.string()), object: s.literal('list')},
    {title: 'ResponseItemList'},
  )
  const event = s.object(
    {
      sequence_number: count,
      type: s.string({
        description: 'response.created, response.in_progress, response.output_item.added, …, response.completed (or response.incomplete).',
        enum: [
          'response.created',
          'response.in_progress',
          'response.output_item.added',
          'response.output_item.done',
          'response.content_part.added',
          'response.content_part.done',
          'response.output_text.delta',
          'response.output_text.done',
          'response.reasoning_summary_part.added',
          'response.reasoning_summary_part.done',
          'response.reasoning_summary_text.delta',
          'response.reasoning_summary_text.done',
          'response.function_call_arguments.delta',
          'response.function_call_arguments.done',
          'response.completed',
          'response.incomplete',
        ],
      }),
    },
    {description: 'Each event is sent as `event: <type>` with its JSON as `data:`; the rest of its fields are those OpenAI defines for its type.', title: 'ResponseStreamEvent', unknownKeys: 'keep'},
  )
  const deleted = s.object({deleted: s.literal(true), id: s.string(), object: s.literal('response')}, {title: 'ResponseDeleted'})
  return {deleted, event, itemList, response}
}
