/**
 * Request schemas and response builders for the OpenAI chat and completions routes. Field names follow
 * the OpenAI API; `top_k`, `min_p` and `repetition_penalty`-style extensions are accepted as the peers
 * (vLLM, llama.cpp, Xinference) accept them.
 */
import type {KernelApi, SamplingOptions} from 'service-toolkit'

export function samplingFields(s: KernelApi['schema']) {
  return {
    frequency_penalty: s.optional(s.nullable(s.number({maximum: 2, minimum: -2}))),
    max_completion_tokens: s.optional(s.nullable(s.integer({minimum: 1}))),
    max_tokens: s.optional(s.nullable(s.integer({minimum: 1}))),
    min_p: s.optional(s.nullable(s.number({maximum: 1, minimum: 0}))),
    n: s.optional(s.nullable(s.integer({description: 'Only 1 is supported.', maximum: 1, minimum: 1}))),
    presence_penalty: s.optional(s.nullable(s.number({maximum: 2, minimum: -2}))),
    seed: s.optional(s.nullable(s.integer())),
    stop: s.optional(s.nullable(s.union([s.string(), s.array(s.string(), {maxItems: 16})], 'a string or an array of up to 16 strings'))),
    stream: s.optional(s.nullable(s.boolean())),
    stream_options: s.optional(s.nullable(s.object({include_usage: s.optional(s.nullable(s.boolean()))}))),
    temperature: s.optional(s.nullable(s.number({maximum: 2, minimum: 0}))),
    top_k: s.optional(s.nullable(s.integer({minimum: 0}))),
    top_p: s.optional(s.nullable(s.number({maximum: 1, minimum: 0}))),
    // Accepted and ignored, as OpenAI clients send them for bookkeeping only.
    metadata: s.optional(s.unknown()),
    service_tier: s.optional(s.unknown()),
    store: s.optional(s.unknown()),
    user: s.optional(s.unknown()),
  }
}

export interface SamplingRequest {
  frequency_penalty?: number | null
  max_completion_tokens?: number | null
  max_tokens?: number | null
  min_p?: number | null
  presence_penalty?: number | null
  seed?: number | null
  stop?: string | string[] | null
  temperature?: number | null
  top_k?: number | null
  top_p?: number | null
}

const defined = <T>(value: T | null | undefined): T | undefined => (value === null ? undefined : value)

export function toSampling(request: SamplingRequest, defaultMaxTokens?: number): SamplingOptions {
  return {
    frequencyPenalty: defined(request.frequency_penalty),
    maxTokens: defined(request.max_completion_tokens) ?? defined(request.max_tokens) ?? defaultMaxTokens,
    minP: defined(request.min_p),
    presencePenalty: defined(request.presence_penalty),
    seed: defined(request.seed),
    stop: request.stop === null || request.stop === undefined ? undefined : Array.isArray(request.stop) ? request.stop : [request.stop],
    temperature: defined(request.temperature),
    topK: defined(request.top_k),
    topP: defined(request.top_p),
  }
}

export const usageOf = (promptTokens: number, completionTokens: number) => ({
  completion_tokens: completionTokens,
  prompt_tokens: promptTokens,
  total_tokens: promptTokens + completionTokens,
})
