/**
 * LLM operations on a pool of parallel context sequences, so concurrent requests share each decode batch: `chat`
 * (with tools and structured output), `complete` and `count_tokens`. Every request is checked and measured before it
 * waits for a sequence, so a bad one fails at once and a stream can announce its prompt size first. Requests that
 * need none of LlamaChat's or LlamaCompletion's machinery take the plain path (plain-generation.ts), and so do
 * constrained ones (`response_format`, forced tool calls), which must end exactly where their grammar does.
 */
import type {ChatHistoryItem, ChatWrapper, Llama, LlamaChatResponseChunk, LlamaContext, LlamaContextSequence, LlamaGrammar, LlamaModel, Token} from 'node-llama-cpp'
import {withLock} from 'lifecycle-utils'
import type {
  ChatPayload,
  CompletionPayload,
  FinishReason,
  GenerationEvent,
  LlmOperations,
  LoadedModel,
  LoadRequest,
  Logger,
  SamplingOptions,
  TokenCountEvent,
  ToolDefinition,
} from 'service-toolkit'

import {BatchGatherer} from './batch-gatherer.js'
import {continuedTextCallbacks} from './continuation.js'
import {contextLengthError, requestError} from './errors.js'
import {EventQueue} from './event-queue.js'
import {chatGrammar} from './grammar.js'
import {generatePlain, plainGenerationSupport, type PlainRequest, sharedPrefix, templateStops, type TextStop} from './plain-generation.js'
import {cachedPromptTokens} from './prompt-cache.js'
import {sampling, tokenBiasFor} from './sampling.js'
import {SequencePool} from './sequence-pool.js'
import {continuesFinalMessage, forcedCallInstructions, ForcedCallParser, toFunctions, toHistory} from './tools.js'

interface Slot {
  /** Its sequence id: a fresh context hands out ids 0, 1, … in the order of `getSequence` calls. */
  id: number
  sequence: LlamaContextSequence
  /** One per chat wrapper the slot has rendered with (with and without thinking). */
  chats?: Map<ChatWrapper, import('node-llama-cpp').LlamaChat>
  completion?: import('node-llama-cpp').LlamaCompletion
}

interface Outcome {
  stopReason: string
  finishReason: FinishReason
  stopSequence?: string
}

/** Where the model's chat template comes from, and the wrapper rendering it (resolved on first call). */
export interface ChatTemplate {
  source: 'gguf' | 'family'
  /** `enableThinking` false: rendered for a hybrid model not to think (see host.ts). */
  wrapper(enableThinking?: boolean): ChatWrapper
}

/** As much of a rendered prompt's end as the reasoning parser reads to know where the reply starts. */
const PROMPT_TAIL_LENGTH = 256

/** A request that passed its checks: its prompt size, and how to run it on a leased sequence. */
interface Prepared {
  promptTokens: number
  /** The prompt as tokens, when known, to lease the sequence that already holds most of it. */
  promptTokenIds?: readonly Token[]
  prompt?: string
  /** The end of the rendered prompt, when the reply's text is the model's raw output (no thought segments). */
  promptTail?: string
  run(slot: Slot, emit: (event: GenerationEvent) => void): Promise<Outcome>
}

type StopMetadata = {stopReason: string; customStopTrigger?: Array<string | number>}

function outcomeOf(metadata: StopMetadata): Outcome {
  const {stopReason} = metadata
  const finishReason: FinishReason = stopReason === 'maxTokens' ? 'length' : stopReason === 'abort' ? 'abort' : 'stop'
  if (stopReason !== 'customStopTrigger') return {finishReason, stopReason}
  return {finishReason, stopReason, stopSequence: metadata.customStopTrigger?.filter((part) => typeof part === 'string').join('')}
}

/** How a chat request uses its tools (see tools.ts): not at all, the model's choice, or a forced call. */
function toolPlan(request: ChatPayload): {mode: 'none' | 'auto' | 'forced'; tools: ToolDefinition[]} {
  const tools = request.tools ?? []
  const choice = request.toolChoice ?? 'auto'
  if (choice === 'none' || tools.length === 0) {
    if (choice !== 'none' && choice !== 'auto') throw requestError('tool_choice asks for a tool call, but the request gives no tools.', 'tool_choice')
    return {mode: 'none', tools: []}
  }

  if (choice === 'auto') return {mode: 'auto', tools}
  if (choice === 'required') return {mode: 'forced', tools}
  const named = tools.find((tool) => tool.name === choice.name)
  if (!named) throw requestError(`tool_choice names the tool "${choice.name}", which is not among the tools: ${tools.map((tool) => tool.name).join(', ')}.`, 'tool_choice')
  return {mode: 'forced', tools: [named]}
}

export async function loadGenerator(options: {
  llama: Llama
  model: LlamaModel
  request: LoadRequest
  log: Logger
  threads: number
  chatTemplate?: ChatTemplate
  contextSize: number
  parallel: number
}): Promise<LoadedModel<LlmOperations>> {
  const {chatTemplate, llama, log, model, parallel, request, threads} = options
  const {LlamaChat, LlamaCompletion, LlamaGrammarEvaluationState, TokenBias} = await import('node-llama-cpp')
  // Found once, on the first ignore_eos request: every token llama.cpp treats as ending generation.
  let endTokens: Token[] | undefined
  const endOfGeneration = () =>
    (endTokens ??= Array.from({length: model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? 0}, (_, id) => id as Token).filter((token) => model.isEogToken(token)))
  const samplingFor = (request: SamplingOptions, budget: number, constrained = false) =>
    sampling(request, budget, tokenBiasFor(model, TokenBias, request, endOfGeneration, constrained))
  let context: LlamaContext
  try {
    context = await model.createContext({batchSize: request.parameters.n_batch as number | undefined, contextSize: options.contextSize, sequences: parallel, threads})
  } catch (error) {
    throw new Error(`llama.cpp could not create a context of ${options.contextSize} tokens × ${parallel} sequences: ${(error as Error).message}`)
  }

  const installed = BatchGatherer.install(context, {lock: (run) => withLock([context, 'context'], run)})
  if (typeof installed === 'string') log.warn(installed)
  const gatherer = typeof installed === 'string' ? undefined : installed
  const slots = Array.from({length: parallel}, (_, id) => ({id, sequence: context.getSequence()}))
  const pool = new SequencePool<Slot>(slots)
  const supported = await plainGenerationSupport(slots[0].sequence)
  if (typeof supported === 'string') log.warn(supported)
  const plainSupport = typeof supported === 'string' ? undefined : supported
  /** The plain path for a request, when it needs nothing of LlamaChat's or LlamaCompletion's (see plain-generation.ts). */
  const plainRequest = (
    options: ReturnType<typeof samplingFor>,
    prompt: readonly Token[],
    stops: {tokens: Token[]; texts: TextStop[]} = {texts: [], tokens: []},
    grammar?: LlamaGrammar,
    continues = false,
  ): PlainRequest | undefined => {
    if (!plainSupport || prompt.length === 0) return undefined
    const {maxTokens, minP, repeatPenalty, seed, temperature, tokenBias, topK, topP} = options
    const requested = (options.customStopTriggers ?? []).map((text) => ({requested: true, text}))
    return {
      continues,
      grammar: grammar && new LlamaGrammarEvaluationState({grammar, model}),
      maxTokens,
      prompt,
      sampling: {minP, repeatPenalty: repeatPenalty || undefined, seed, temperature, tokenBias, topK, topP},
      stopTexts: [...requested, ...stops.texts],
      stopTokens: new Set(stops.tokens),
    }
  }
  const vocabularySize = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? Number.POSITIVE_INFINITY
  log.info(`loaded ${request.modelPath}: context ${context.contextSize} × ${parallel} sequences, ${context.currentThreads} threads, chat template: ${chatTemplate?.source ?? 'none'}`)
  // Once the ready message is out; a request arriving first resolves it itself.
  if (chatTemplate)
    setImmediate(() => {
      try {
        log.info(`chat template rendered as ${chatTemplate.wrapper().wrapperName}`)
      } catch (error) {
        log.debug(`chat template not resolved: ${(error as Error).message}`)
      }
    })

  const budgetAfter = (promptTokens: number, param: string) => {
    const budget = context.contextSize - promptTokens
    if (budget < 1)
      throw contextLengthError(
        `the prompt is ${promptTokens} tokens, which leaves no room in this model's ${context.contextSize}-token context; shorten it, or relaunch the model with a larger --n_ctx.`,
        param,
      )
    return budget
  }

  /**
   * Runs one prepared request on a leased sequence and turns its callbacks into a stream of events. Generated
   * tokens are counted by the sequence's own meter: `onToken` re-emits text held back for stop-trigger checks as
   * re-tokenized pieces, so counting its calls over-counts.
   */
  async function* generate(signal: AbortSignal, prepare: () => Prepared | Promise<Prepared>): AsyncGenerator<GenerationEvent> {
    // Announced before the prompt is rendered, so that requests arriving together at an idle model start together.
    const arrival = gatherer?.arriving()
    try {
      const prepared = await prepare()
      const {prompt, promptTail} = prepared
      yield {promptTokens: prepared.promptTokens, type: 'start', ...(prompt === undefined ? {} : {prompt}), ...(promptTail === undefined ? {} : {promptTail})}
      const wanted = prepared.promptTokenIds
      const slot = await pool.acquire(signal, wanted && ((candidate) => sharedPrefix(candidate.sequence.contextTokens, wanted)))
      arrival?.at(slot.id)
      const queue = new EventQueue<GenerationEvent>()
      const outputBefore = slot.sequence.tokenMeter.usedOutputTokens
      const inputBefore = slot.sequence.tokenMeter.usedInputTokens
      const {promptTokens} = prepared
      const done = prepared.run(slot, (event) => queue.push(event)).then(
        ({finishReason, stopReason, stopSequence}) => {
          gatherer?.settle(slot.id)
          const completionTokens = slot.sequence.tokenMeter.usedOutputTokens - outputBefore
          const cachedTokens = cachedPromptTokens(promptTokens, slot.sequence.tokenMeter.usedInputTokens - inputBefore)
          log.info(`request finished: ${stopReason}, ${promptTokens} prompt (${cachedTokens} from the cache) + ${completionTokens} generated tokens`)
          queue.push({cachedTokens, completionTokens, finishReason, promptTokens, type: 'done', ...(stopSequence === undefined ? {} : {stopSequence})})
          queue.end()
        },
        (error) => {
          gatherer?.settle(slot.id)
          queue.fail(error)
        },
      )
      try {
        yield* queue
      } finally {
        await done
        pool.release(slot)
      }
    } finally {
      arrival?.release()
    }
  }

  /** The history, functions and instructions a chat request is rendered with, and its size in tokens. */
  function renderChat(request: ChatPayload) {
    if (!chatTemplate) throw requestError('this model has no chat template; use /v1/completions.', 'model')
    const plan = toolPlan(request)
    const functions = plan.mode === 'auto' ? toFunctions(plan.tools) : undefined
    const history: ChatHistoryItem[] = toHistory(request.messages, plan.mode === 'forced' ? forcedCallInstructions(plan.tools) : undefined, request.continueFinalMessage)
    const wrapper = chatTemplate.wrapper(request.enableThinking !== false)
    const state = wrapper.generateContextState({availableFunctions: functions, chatHistory: history, documentFunctionParams: true})
    // A wrapper that knows the template's thought segments reports them; otherwise the reply's text carries its markers.
    const thoughtSegments = wrapper.settings.segments?.thought !== undefined
    const promptTail = thoughtSegments ? undefined : state.contextText.toString().slice(-PROMPT_TAIL_LENGTH)
    const promptTokenIds = state.contextText.tokenize(model.tokenizer)
    const prefilled = continuesFinalMessage(request.messages, request.continueFinalMessage) && request.messages.at(-1)!.content !== ''
    // What the plain path must handle to stand in for LlamaChat: only stop triggers.
    const plainStops =
      plan.mode === 'none' &&
      Object.keys(wrapper.settings.segments ?? {}).length === 0 &&
      !state.ignoreStartText?.length &&
      !state.functionCall &&
      !state.prefixTriggers?.length &&
      !state.noPrefixTrigger &&
      !state.rerender &&
      !state.detectFunctionCalls
        ? templateStops(model, state.stopGenerationTriggers)
        : undefined
    // Under a grammar only a response prefix (which LlamaChat puts before the reply) keeps the plain path from it.
    const plainUnderGrammar = !state.prefixTriggers?.some((trigger) => trigger.type === 'response') && state.noPrefixTrigger?.type !== 'response'
    return {functions, history, plainStops, plainUnderGrammar, plan, prefilled, promptTail, promptTokenIds, promptTokens: promptTokenIds.length, wrapper}
  }

  async function prepareChat(request: ChatPayload, signal: AbortSignal): Promise<Prepared> {
    const {functions, history, plainStops, plainUnderGrammar, plan, prefilled, promptTail, promptTokenIds, promptTokens, wrapper} = renderChat(request)
    const grammar = await chatGrammar(llama, request, plan)
    const options = samplingFor(request, budgetAfter(promptTokens, 'messages'), grammar !== undefined)
    const plain = grammar
      ? plainUnderGrammar && plainRequest(options, promptTokenIds, undefined, grammar, prefilled)
      : plainStops && plainRequest(options, promptTokenIds, plainStops, undefined, prefilled)
    /** A forced call's text becomes tool-call events; a complete one ends the reply with `tool_calls`. */
    const callFrom = async (emit: (event: GenerationEvent) => void, generateText: (onText: (text: string) => void) => Promise<Outcome>) => {
      const parser = new ForcedCallParser(emit)
      const outcome = await generateText((text) => parser.push(text))
      const complete = outcome.finishReason === 'stop'
      return parser.finish(complete) && complete ? {...outcome, finishReason: 'tool_calls' as const} : outcome
    }

    return {
      promptTail,
      promptTokenIds,
      promptTokens,
      async run(slot, emit) {
        if (plain && plan.mode === 'forced')
          return callFrom(emit, (onText) => generatePlain(model, slot.sequence, plainSupport!, plain, signal, (event) => (event.type === 'text' ? onText(event.text) : emit(event))))
        if (plain) return generatePlain(model, slot.sequence, plainSupport!, plain, signal, emit)
        slot.chats ??= new Map()
        const chat = slot.chats.get(wrapper) ?? new LlamaChat({autoDisposeSequence: false, chatWrapper: wrapper, contextSequence: slot.sequence})
        slot.chats.set(wrapper, chat)
        // A stop text would cut a constrained reply short of what its grammar requires.
        const common = {
          ...options,
          budgets: request.reasoningBudget === undefined ? undefined : {thoughtTokens: request.reasoningBudget},
          customStopTriggers: grammar ? undefined : options.customStopTriggers,
          onResponseChunk: (chunk: LlamaChatResponseChunk) => chunk.type === 'segment' && chunk.segmentType === 'thought' && chunk.text && emit({text: chunk.text, type: 'reasoning'}),
          signal,
          stopOnAbortSignal: true,
        }
        if (plan.mode === 'forced') return callFrom(emit, async (onText) => outcomeOf((await chat.generateResponse(history, {...common, grammar, onTextChunk: onText})).metadata))

        const onText = (text: string) => text && emit({text, type: 'text'})
        const textCallbacks = prefilled ? continuedTextCallbacks(model, promptTokenIds, onText) : {onTextChunk: onText}
        if (!functions) {
          const result = await chat.generateResponse(history, {...common, ...textCallbacks, grammar})
          return outcomeOf(result.metadata)
        }

        // node-llama-cpp streams the parameters of each call; a call whose parameters never streamed (none, or
        // parsed in one piece) is completed from the final result so that every call has JSON arguments.
        const streamed = new Map<number, string>()
        const result = await chat.generateResponse(history, {
          ...common,
          documentFunctionParams: true,
          functions,
          onFunctionCallParamsChunk({callIndex, functionName, paramsChunk}) {
            if (!streamed.has(callIndex)) emit({index: callIndex, name: functionName, type: 'tool_call'})
            streamed.set(callIndex, (streamed.get(callIndex) ?? '') + paramsChunk)
            if (paramsChunk) emit({index: callIndex, text: paramsChunk, type: 'tool_arguments'})
          },
          ...textCallbacks,
        })
        for (const [index, call] of (result.functionCalls ?? []).entries()) {
          if (!streamed.has(index)) emit({index, name: call.functionName, type: 'tool_call'})
          if (!streamed.get(index)?.trim()) emit({index, text: JSON.stringify(call.params ?? {}), type: 'tool_arguments'})
        }

        const outcome = outcomeOf(result.metadata)
        return result.functionCalls?.length ? {...outcome, finishReason: 'tool_calls'} : outcome
      },
    }
  }

  const operations: LoadedModel<LlmOperations>['operations'] = {
    complete: (request, requestSignal) => {
      return generate(requestSignal, () => {
        const tokens = typeof request.prompt === 'string' ? undefined : (request.prompt as Token[])
        const bad = tokens?.findIndex((token) => !Number.isInteger(token) || token < 0 || token >= vocabularySize) ?? -1
        if (bad >= 0) throw requestError(`prompt[${bad}] is not a token id of this model (its vocabulary has ${vocabularySize} tokens).`, 'prompt')
        // Token ids are the prompt as given, as vLLM and llama-server take them. Text is evaluated as LlamaCompletion
        // evaluates it: the BOS token (when the model wants one), then the text tokenized without the leading space
        // SentencePiece would add. LlamaCompletion, left to run a prompt when the plain path is off, puts that BOS token
        // before token ids too, and then they are counted with it.
        const bos = model.tokens.shouldPrependBosToken && model.tokens.bos !== null ? [model.tokens.bos] : []
        const promptTokenIds =
          tokens?.length && plainSupport ? tokens : [...bos, ...(tokens ?? model.tokenize(request.prompt as string, false, bos.length > 0 ? 'trimLeadingSpace' : undefined))]
        const promptTokens = promptTokenIds.length
        const options = samplingFor(request, budgetAfter(promptTokens, 'prompt'))
        const plain = plainRequest(options, promptTokenIds)
        return {
          prompt: tokens ? model.detokenize(tokens) : undefined,
          promptTokenIds,
          promptTokens,
          async run(slot, emit) {
            if (plain) return generatePlain(model, slot.sequence, plainSupport!, plain, requestSignal, emit)
            slot.completion ??= new LlamaCompletion({contextSequence: slot.sequence})
            const onTextChunk = (text: string) => text && emit({text, type: 'text'})
            const result = await slot.completion.generateCompletionWithMeta(tokens ?? (request.prompt as string), {...options, onTextChunk, signal: requestSignal, stopOnAbortSignal: true})
            return outcomeOf(result.metadata)
          },
        }
      })
    },
  }

  if (chatTemplate) {
    operations.chat = (payload, requestSignal) => generate(requestSignal, () => prepareChat(payload, requestSignal))
    operations.count_tokens = (payload) =>
      (async function* (): AsyncGenerator<TokenCountEvent> {
        yield {count: renderChat(payload).promptTokens, type: 'tokens'}
      })()
  }

  return {
    async dispose() {
      gatherer?.dispose()
      await context.dispose()
    },
    info: {
      abilities: chatTemplate ? ['chat', 'generate'] : ['generate'],
      chatTemplate: chatTemplate?.source ?? null,
      contextLength: context.contextSize,
      parallel,
      threads: context.currentThreads,
    },
    operations,
    usage: () => pool.usage(),
  }
}
