/** A request's sampling options as node-llama-cpp's generation options, shared by LlamaChat, LlamaCompletion and the plain path. */
import type {LlamaModel, Token, TokenBias} from 'node-llama-cpp'
import type {SamplingOptions} from 'service-toolkit'

import {randomInt} from 'node:crypto'

import {requestError} from './errors.js'

/** llama.cpp reads a seed as 32 bits and takes 2^32 − 1 (LLAMA_DEFAULT_SEED) as "pick one", so seeds stay below it. */
const SEEDS = 2 ** 32 - 1

/**
 * OpenAI's logit_bias and ignore_eos as a node-llama-cpp TokenBias. `TokenBias.set` skips end-of-generation
 * tokens, but the sampler applies whatever its bias map holds, so those are written to the map directly:
 * without that, ignore_eos (banning them) could not be expressed. A `constrained` reply ends when its grammar is
 * complete, through an end-of-generation token, so those are left alone: banned, the reply could not end.
 */
export function tokenBiasFor(model: LlamaModel, TokenBiasClass: typeof TokenBias, options: SamplingOptions, endTokens: () => Token[], constrained: boolean) {
  if (!options.logitBias && !options.ignoreEos) return undefined
  const bias = new TokenBiasClass(model.tokenizer)
  const biases = (bias as unknown as {_biases: Map<Token, number>})._biases
  const vocabulary = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? Number.MAX_SAFE_INTEGER
  for (const [id, value] of Object.entries(options.logitBias ?? {})) {
    if (Number(id) >= vocabulary) throw requestError(`\`logit_bias\` names token ${id}, but this model's vocabulary has ${vocabulary} tokens.`, `logit_bias.${id}`)
    if (!(constrained && model.isEogToken(Number(id) as Token))) biases.set(Number(id) as Token, value <= -100 ? -Infinity : value >= 100 ? Infinity : value)
  }

  if (options.ignoreEos && !constrained) for (const token of endTokens()) biases.set(token, -Infinity)
  return bias
}

/**
 * A request without a seed gets a random one of its own, as OpenAI's API, vLLM and llama-server give it: left
 * undefined, node-llama-cpp seeds with the current second, so requests arriving in the same second would sample alike.
 */
export function sampling(options: SamplingOptions, budget: number, tokenBias?: TokenBias) {
  const penalize = options.presencePenalty !== undefined || options.frequencyPenalty !== undefined || options.repetitionPenalty !== undefined
  return {
    tokenBias,
    customStopTriggers: options.stop?.length ? options.stop : undefined,
    maxTokens: Math.max(1, Math.min(options.maxTokens ?? budget, budget)),
    minP: options.minP,
    repeatPenalty: penalize
      ? {frequencyPenalty: options.frequencyPenalty, lastTokens: 64, penalty: options.repetitionPenalty ?? 1, presencePenalty: options.presencePenalty}
      : (false as const),
    seed: options.seed ?? randomInt(SEEDS),
    temperature: options.temperature ?? 1,
    topK: options.topK,
    topP: options.topP,
  }
}
