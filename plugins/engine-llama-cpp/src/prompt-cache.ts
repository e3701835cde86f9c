/**
 * How many of a prompt's tokens a request took from its sequence's cache, read off the sequence's own token meter,
 * so it is what llama.cpp did rather than what it could have done. node-llama-cpp (and the plain path, through the
 * same decode) keeps the tokens the sequence already holds of the prompt and evaluates the rest in one decode whose
 * last token alone has logits, metered as one "output" token, the others as "input"; each generated token is decoded
 * with logits, as "output" too. So the prompt's evaluated tokens are the input tokens metered during the request
 * plus its last token, and the rest came from the cache: the whole prompt but its last token when the sequence held
 * all of it (that token is decoded again for its logits), none on a fresh sequence. A context shift meters the tokens
 * it moves as input, which can only lower the count; it never goes below 0.
 */
export function cachedPromptTokens(promptTokens: number, inputTokensMetered: number): number {
  return Math.max(0, promptTokens - 1 - inputTokensMetered)
}
