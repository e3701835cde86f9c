/**
 * Text generation without node-llama-cpp's LlamaChat and LlamaCompletion, for the requests that need none of
 * their machinery (no tools, no thought segments): decode, sample, stop, emit.
 * Each token costs a few hundredths of a millisecond of the main thread instead of about a tenth, which on a
 * small model is a fifth of the token's time. Everything else goes through LlamaChat as before.
 *
 * Constrained requests (`response_format`, forced tool calls) take this path too, with a grammar: their reply ends
 * only where the grammar is complete, so it always fits its schema, or at `maxTokens` ("length"). No stop text, stop
 * token or chat template trigger can cut it short (LlamaChat stops on its template's text triggers wherever they
 * appear, even inside a JSON string).
 *
 * It decodes through the sequence's own entry point (`_decodeTokens`, private to node-llama-cpp), so the
 * sequence keeps track of its tokens and the batch gatherer puts it in the same batches as every other request.
 */
import type {LlamaContextSequence, LlamaGrammarEvaluationState, LlamaModel, LlamaText, Token, TokenBias} from 'node-llama-cpp'
import type {FinishReason, GenerationEvent} from 'service-toolkit'

/** Text that ends generation: what the client asked for (reported back), or what the chat template ends with. */
export interface TextStop {
  text: string
  requested: boolean
}

/** Finds stop texts in generated text, holding back what could still become one. */
export class StopMatcher {
  private held = ''

  constructor(private readonly stops: readonly TextStop[]) {}

  /** The text that is safe to emit, and the stop found, if any (the text from it on is dropped). */
  push(text: string): {text: string; stop?: TextStop} {
    const buffer = this.held + text
    let found: {at: number; stop: TextStop} | undefined
    for (const stop of this.stops) {
      const at = buffer.indexOf(stop.text)
      if (at >= 0 && (found === undefined || at < found.at)) found = {at, stop}
    }

    if (found) {
      this.held = ''
      return {stop: found.stop, text: buffer.slice(0, found.at)}
    }

    let hold = 0
    for (const {text: stop} of this.stops)
      for (let length = Math.min(stop.length - 1, buffer.length); length > hold; length--)
        if (buffer.endsWith(stop.slice(0, length))) {
          hold = length
          break
        }

    this.held = buffer.slice(buffer.length - hold)
    return {text: buffer.slice(0, buffer.length - hold)}
  }

  /** What was held back, when generation ends for another reason. */
  flush(): string {
    const rest = this.held
    this.held = ''
    return rest
  }
}

export interface PlainOutcome {
  stopReason: 'eogToken' | 'stopGenerationTrigger' | 'customStopTrigger' | 'grammarComplete' | 'maxTokens' | 'abort'
  finishReason: FinishReason
  stopSequence?: string
}

export interface PlainRequest {
  /** The whole prompt, as tokens; whatever the sequence already holds of it is not decoded again. */
  prompt: readonly Token[]
  maxTokens: number
  stopTokens: ReadonlySet<Token>
  stopTexts: readonly TextStop[]
  sampling: {temperature: number; minP?: number; topK?: number; topP?: number; seed?: number; tokenBias?: TokenBias; repeatPenalty?: RepeatPenalty}
  /** The reply must complete this grammar (a state of its own); stop tokens and texts are then not looked for. */
  grammar?: LlamaGrammarEvaluationState
  /** The reply continues the prompt's last text (a prefill) rather than starting a turn of its own. */
  continues?: boolean
}

/** Presence and frequency penalties on the last `lastTokens` generated tokens, as node-llama-cpp's `repeatPenalty`. */
export interface RepeatPenalty {
  lastTokens: number
  penalty?: number
  presencePenalty?: number
  frequencyPenalty?: number
}

/** node-llama-cpp internals the plain path uses; `plainGenerationSupport` checks they are there. */
interface SequenceInternals {
  _decodeTokens(tokens: Token[], logits: boolean[], priority: number, meter: unknown, shift: unknown, mapLogits: (batchLogitIndex: number) => unknown): Promise<unknown[]>
  _resolveSamplerConfig(
    options: Omit<PlainRequest['sampling'], 'repeatPenalty'> & {
      grammarEvaluationState?: LlamaGrammarEvaluationState
      repeatPenalty?: Omit<RepeatPenalty, 'lastTokens'> & {punishTokens: Token[]; maxPunishTokens: number}
    },
  ): unknown
  _tokenMeter: unknown
  _contextShift: unknown
  _context: {_ctx: {sampleToken(batchLogitIndex: number, sampler: unknown): Promise<Token>}}
}

interface Sampler {
  _sampler: unknown
  applyConfig(config: unknown): void
  asyncDispose(): Promise<void>
}

export interface PlainSupport {
  createSampler(model: LlamaModel): Sampler
  /** Whether the grammar, in its current state, lets `token` come next. */
  grammarAllows(state: LlamaGrammarEvaluationState, token: Token): boolean
}

/**
 * node-llama-cpp's sampler class, from inside the package (it is not exported), or why the plain path is off:
 * after an upgrade that moved it, every request goes through LlamaChat.
 */
export async function plainGenerationSupport(sequence: LlamaContextSequence): Promise<PlainSupport | string> {
  const internals = sequence as unknown as Partial<SequenceInternals>
  if (typeof internals._decodeTokens !== 'function' || typeof internals._resolveSamplerConfig !== 'function' || !internals._context?._ctx)
    return 'this node-llama-cpp has no LlamaContextSequence._decodeTokens or _resolveSamplerConfig; every request goes through LlamaChat'
  try {
    const {LlamaSampler} = (await import(new URL('evaluator/LlamaContext/LlamaSampler.js', import.meta.resolve('node-llama-cpp')).href)) as {
      LlamaSampler: (new (model: LlamaModel) => Sampler) & {_canBeNextTokenForGrammarEvaluationState?(llama: unknown, state: LlamaGrammarEvaluationState, token: Token): boolean}
    }
    const canBeNext = LlamaSampler._canBeNextTokenForGrammarEvaluationState
    if (typeof canBeNext !== 'function') return "this node-llama-cpp's LlamaSampler cannot test a token against a grammar; every request goes through LlamaChat"
    return {
      createSampler: (model) => new LlamaSampler(model),
      grammarAllows: (state, token) => canBeNext.call(LlamaSampler, (state as unknown as {_llama: unknown})._llama, state, token),
    }
  } catch (error) {
    return `node-llama-cpp's LlamaSampler could not be loaded (${(error as Error).message}); every request goes through LlamaChat`
  }
}

/** How many tokens two sequences share from their start. */
export function sharedPrefix(held: readonly Token[], wanted: readonly Token[]): number {
  const length = Math.min(held.length, wanted.length)
  let shared = 0
  while (shared < length && held[shared] === wanted[shared]) shared++
  return shared
}

/**
 * The chat template's stop triggers as tokens and texts, or undefined when one of them is a run of special
 * tokens (which only LlamaChat's detector handles).
 */
export function templateStops(model: LlamaModel, triggers: ReadonlyArray<LlamaText | string>): {tokens: Token[]; texts: TextStop[]} | undefined {
  const tokens: Token[] = []
  const texts: TextStop[] = []
  for (const trigger of triggers) {
    if (typeof trigger === 'string') {
      texts.push({requested: false, text: trigger})
      continue
    }

    if (trigger.values.every((value) => typeof value === 'string')) {
      texts.push({requested: false, text: trigger.values.join('')})
      continue
    }

    const ids = trigger.tokenize(model.tokenizer, 'trimLeadingSpace')
    if (ids.length !== 1) return undefined
    tokens.push(ids[0])
  }

  return {texts, tokens}
}

/** Text of the tokens generated since the last whole character, read after the tokens before them. */
const contextTokens = 4

/** Resolves once the event loop has run everything already queued: the promise steps that pass an event on. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Generates on a leased sequence: the prompt's new part first, then one token per decode until a stop. Under a
 * grammar the sampler only offers tokens the grammar allows, and end-of-generation tokens only once it is complete.
 */
export async function generatePlain(
  model: LlamaModel,
  sequence: LlamaContextSequence,
  support: PlainSupport,
  request: PlainRequest,
  signal: AbortSignal,
  emit: (event: GenerationEvent) => void,
): Promise<PlainOutcome> {
  const internals = sequence as unknown as SequenceInternals
  const {prompt} = request
  // The prompt's last token is decoded again when the sequence holds all of it: its logits are not kept.
  const reused = Math.min(sharedPrefix(sequence.contextTokens, prompt), prompt.length - 1)
  if (reused < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{end: sequence.nextTokenIndex, start: reused}])
  const {grammar} = request
  const generated: Token[] = []
  const sampler = support.createSampler(model)
  const {repeatPenalty, ...sampling} = request.sampling
  // Penalized as LlamaChat and LlamaCompletion penalize: the last tokens generated, newlines aside, told again before each token.
  const penalized = ({lastTokens, ...penalty}: RepeatPenalty) => ({
    ...penalty,
    maxPunishTokens: lastTokens,
    punishTokens: generated.slice(Math.max(0, generated.length - lastTokens)).filter((token) => token !== model.tokens.nl),
  })
  const configure = () =>
    sampler.applyConfig(internals._resolveSamplerConfig({...sampling, grammarEvaluationState: grammar, repeatPenalty: repeatPenalty && penalized(repeatPenalty)}))

  configure()
  const native = internals._context._ctx
  const sample = (batchLogitIndex: number) => native.sampleToken(batchLogitIndex, sampler._sampler)
  const matcher = new StopMatcher(grammar ? [] : request.stopTexts)
  const endToken = model.tokens.eos ?? model.tokens.eot
  const complete = () => grammar !== undefined && endToken !== null && support.grammarAllows(grammar, endToken)
  // What the tokenizer reads the first piece after. Nothing for a turn of its own, as LlamaChat and LlamaCompletion
  // read it, so that a response does not start with the space a tokenizer puts between words; the prompt's end for a
  // continued reply, whose first word that space separates from the prefill's last.
  const lead = request.continues ? prompt.slice(-contextTokens) : []
  /** Generated tokens not yet turned into text. */
  let pending = 0
  /** Whether text has been emitted yet; the first is handed on before the next decode (see the loop). */
  let textEmitted = false
  const pendingText = () => {
    const start = generated.length - pending
    const before = start >= contextTokens ? generated.slice(start - contextTokens, start) : [...lead.slice(start - contextTokens), ...generated.slice(0, start)]
    return model.detokenize(generated.slice(start), false, before)
  }
  /** Ends without a stop text: what was held back (a partial stop text, a partial character) is text after all. */
  const end = (outcome: PlainOutcome) => {
    const rest = (pending > 0 ? pendingText() : '') + matcher.flush()
    if (rest) emit({text: rest, type: 'text'})
    return outcome
  }

  try {
    let input: Token[] = prompt.slice(reused)
    for (;;) {
      if (signal.aborted) return end({finishReason: 'abort', stopReason: 'abort'})
      const logits = input.map((_, index) => index === input.length - 1)
      const results = await internals._decodeTokens(input, logits, 5, internals._tokenMeter, internals._contextShift, sample)
      const token = results[input.length - 1] as Token
      if (token === -1) throw new Error('llama.cpp failed to sample the next token')
      if ((!grammar && request.stopTokens.has(token)) || model.isEogToken(token)) return end({finishReason: 'stop', stopReason: 'eogToken'})
      generated.push(token)
      pending++
      const text = pendingText()
      // A character split across tokens waits for its last byte (UTF-8 has at most four).
      if (!text.endsWith('\uFFFD') || pending >= 4) {
        pending = 0
        const {stop, text: safe} = matcher.push(text)
        if (safe) emit({text: safe, type: 'text'})
        if (stop)
          return stop.requested
            ? {finishReason: 'stop', stopReason: 'customStopTrigger', stopSequence: stop.text}
            : {finishReason: 'stop', stopReason: 'stopGenerationTrigger'}
        // The first text (the TTFT) goes on its way, through the promise steps between here and the model process's
        // outbox, before the next decode starts: started first, that decode holds both cores of a small machine
        // while the service and the client wait for a scheduler tick to pass the token on.
        if (safe && !textEmitted) {
          textEmitted = true
          if (generated.length < request.maxTokens) await nextTurn()
        }
      }

      if (generated.length >= request.maxTokens)
        return end(complete() ? {finishReason: 'stop', stopReason: 'grammarComplete'} : {finishReason: 'length', stopReason: 'maxTokens'})
      input = [token]
      if (repeatPenalty) configure()
    }
  } finally {
    void sampler.asyncDispose()
  }
}
