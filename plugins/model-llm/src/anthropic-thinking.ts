/**
 * Anthropic's `thinking` for the reasoning models this service runs: what a request asks (enabled with a budget,
 * disabled, or the model's choice: adaptive, between_tools, absent), as the engine's thinking switch and budget, and
 * how the reasoning is shown (`display` omitted: the blocks come without their text, as Anthropic's do).
 */
import type {ChatPayload, KernelApi} from 'service-toolkit'

export function thinkingField(s: KernelApi['schema']) {
  return s.optional(
    s.object(
      {
        budget_tokens: s.optional(s.integer({maximum: s.INT32_MAX, minimum: 1024})),
        display: s.optional(s.nullable(s.string({enum: ['summarized', 'omitted']}))),
        type: s.string({enum: ['enabled', 'disabled', 'adaptive', 'between_tools']}),
      },
      {
        description:
          "A reasoning model's thinking: enabled (its blocks come first), disabled (a hybrid model answers without), adaptive or between_tools (as the model does, also when absent).",
      },
    ),
  )
}

export interface ThinkingRequest {
  type: string
  budget_tokens?: number
  display?: string | null
}

/** The engine's thinking switch and budget for a request; `enabled` needs its budget, as on Anthropic's API. */
export function thinkingPayload(api: KernelApi, thinking: ThinkingRequest | undefined): Pick<ChatPayload, 'enableThinking' | 'reasoningBudget'> {
  if (thinking?.type === 'disabled') return {enableThinking: false}
  if (thinking?.type !== 'enabled') return {}
  if (thinking.budget_tokens === undefined)
    throw api.errors.badRequest('`thinking.budget_tokens` is required when `thinking.type` is "enabled": the most tokens the reasoning may take, at least 1024.', 'thinking.budget_tokens')
  return {enableThinking: true, reasoningBudget: thinking.budget_tokens}
}

/** As Anthropic's API: the reasoning and the answer share max_tokens, so the budget must leave room for an answer. */
export function checkThinkingBudget(api: KernelApi, thinking: ThinkingRequest | undefined, maxTokens: number): void {
  if (thinking?.type === 'enabled' && (thinking.budget_tokens ?? 0) >= maxTokens)
    throw api.errors.badRequest('`thinking.budget_tokens` must be less than `max_tokens`, which counts the thinking and the answer together.', 'thinking.budget_tokens')
}

/** The text a thinking block shows of the reasoning: none when the request's display omits it. */
export const shownThinking = (thinking: ThinkingRequest | undefined, text: string) => (thinking?.display === 'omitted' ? '' : text)

/** Unsigned: the signature Anthropic's SDK types require, which a local model has no key to make. */
export const thinkingBlock = (thinking: string) => ({signature: '', thinking, type: 'thinking'})
