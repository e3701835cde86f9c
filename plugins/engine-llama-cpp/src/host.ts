/**
 * Runs inside a model instance's own process: loads one GGUF with node-llama-cpp and serves `chat` and
 * `complete` on a pool of parallel context sequences, so concurrent requests share each decode batch.
 */
import type {
  ChatHistoryItem,
  ChatWrapper,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
} from 'node-llama-cpp'
import type {ChatPayload, CompletionPayload, EngineHost, FinishReason, GenerationEvent, LoadRequest, Logger, SamplingOptions} from 'service-toolkit'

import {open, stat} from 'node:fs/promises'

import {DEFAULT_CONTEXT, DEFAULT_PARALLEL} from './defaults.js'
import {EventQueue} from './event-queue.js'
import {SequencePool} from './sequence-pool.js'

/**
 * node-llama-cpp's prebuilt binaries start and join worker threads on every decode step, which costs more
 * than a small model's whole token: measured on 2 cores, a 135M-parameter F32 model decodes at 57 tok/s on
 * one thread and 35 on two, a 4M one at 1352 vs 70, and four threads are slower still. Extra threads only
 * pay off once a token's work is large, so small models default to one thread.
 */
const SINGLE_THREAD_BELOW_BYTES = 2 * 1024 ** 3

async function defaultThreads(modelPath: string, cores: number): Promise<number> {
  const {size} = await stat(modelPath)
  return size < SINGLE_THREAD_BELOW_BYTES ? 1 : Math.max(1, cores)
}

interface Slot {
  sequence: LlamaContextSequence
  chat?: import('node-llama-cpp').LlamaChat
  completion?: import('node-llama-cpp').LlamaCompletion
}

/** Errors in the shape the kernel renders (status, code, message); a plain Error would become a 500. */
const requestError = (message: string, param?: string) => Object.assign(new Error(message), {code: 'invalid_request', param, status: 400})

function finishReason(stopReason: string): FinishReason {
  if (stopReason === 'maxTokens') return 'length'
  if (stopReason === 'abort') return 'abort'
  return 'stop'
}

function toHistory(messages: ChatPayload['messages']): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = []
  for (const message of messages) {
    if (message.role === 'system') history.push({text: message.content, type: 'system'})
    else if (message.role === 'assistant') history.push({response: [message.content], type: 'model'})
    else if (message.role === 'tool') history.push({text: `Tool result: ${message.content}`, type: 'user'})
    else history.push({text: message.content, type: 'user'})
  }

  history.push({response: [], type: 'model'})
  return history
}

function sampling(options: SamplingOptions, budget: number) {
  const penalize = options.presencePenalty !== undefined || options.frequencyPenalty !== undefined
  return {
    customStopTriggers: options.stop?.length ? options.stop : undefined,
    maxTokens: Math.max(1, Math.min(options.maxTokens ?? budget, budget)),
    minP: options.minP,
    repeatPenalty: penalize
      ? {frequencyPenalty: options.frequencyPenalty, lastTokens: 64, penalty: 1, presencePenalty: options.presencePenalty}
      : (false as const),
    seed: options.seed,
    temperature: options.temperature ?? 1,
    topK: options.topK,
    topP: options.topP,
  }
}

async function chooseChatWrapper(model: LlamaModel, family: LoadRequest['family'], log: Logger): Promise<ChatWrapper | undefined> {
  const {JinjaTemplateChatWrapper, resolveChatWrapper} = await import('node-llama-cpp')
  const embedded = model.fileInfo.metadata.tokenizer?.chat_template
  if (embedded) return resolveChatWrapper(model) ?? undefined
  if (family.chat_template) {
    try {
      return new JinjaTemplateChatWrapper({template: family.chat_template})
    } catch (error) {
      log.warn(`the family's chat_template cannot be used: ${(error as Error).message}`)
    }
  }

  return undefined
}

/**
 * node-llama-cpp reads a file with a wrong magic or version as "GGUF version 3" and never returns, so the
 * header is checked first: a launch of the wrong file must fail with a reason, not hang.
 */
async function checkGgufHeader(path: string) {
  const file = await open(path, 'r')
  try {
    const {buffer, bytesRead} = await file.read(Buffer.alloc(8), 0, 8, 0)
    const magic = buffer.subarray(0, 4).toString('latin1')
    const version = buffer.readUInt32LE(4)
    if (bytesRead < 8 || magic !== 'GGUF') throw new Error(`${path} is not a GGUF file (it does not start with "GGUF")`)
    if (version < 2 || version > 3) throw new Error(`${path} is GGUF version ${version}; llama.cpp reads versions 2 and 3`)
  } finally {
    await file.close()
  }
}

const host: EngineHost = {
  async load(request, {log, progress}) {
    await checkGgufHeader(request.modelPath)
    const {getLlama, LlamaChat, LlamaCompletion} = await import('node-llama-cpp')
    const {parameters} = request
    // llama.cpp explains a failed load only in its log; the last errors are kept to say why.
    const recentErrors: string[] = []
    const llama = await getLlama({
      build: 'never',
      gpu: parameters.n_gpu_layers === 0 ? false : 'auto',
      logger(level, message) {
        log.debug(`llama.cpp ${level}: ${message.trimEnd()}`)
        if (level === 'error' || level === 'fatal') recentErrors.splice(0, recentErrors.length - 2, message.trim())
      },
    })
    const gpuLayers = parameters.n_gpu_layers === undefined ? undefined : parameters.n_gpu_layers === -1 ? 'max' : (parameters.n_gpu_layers as number)
    let model: LlamaModel
    try {
      model = await llama.loadModel({
        defaultContextFlashAttention: parameters.flash_attn as boolean | undefined,
        gpuLayers,
        modelPath: request.modelPath,
        onLoadProgress: progress,
        useMmap: parameters.use_mmap as boolean | undefined,
      })
    } catch (error) {
      const detail = recentErrors.length > 0 ? ` (${recentErrors.join('; ')})` : ''
      throw new Error(`llama.cpp could not load ${request.modelPath}: ${(error as Error).message}${detail}`)
    }

    const contextSize = Math.min((parameters.n_ctx as number | undefined) ?? DEFAULT_CONTEXT, model.trainContextSize)
    const parallel = (parameters.n_parallel as number | undefined) ?? DEFAULT_PARALLEL
    let context: LlamaContext
    try {
      context = await model.createContext({
        batchSize: parameters.n_batch as number | undefined,
        contextSize,
        sequences: parallel,
        threads: (parameters.n_threads as number | undefined) ?? (await defaultThreads(request.modelPath, llama.cpuMathCores)),
      })
    } catch (error) {
      await model.dispose()
      throw new Error(`llama.cpp could not create a context of ${contextSize} tokens × ${parallel} sequences: ${(error as Error).message}`)
    }

    const chatWrapper = await chooseChatWrapper(model, request.family, log)
    const slots: Slot[] = Array.from({length: parallel}, () => ({sequence: context.getSequence()}))
    const pool = new SequencePool(slots)
    log.info(`loaded ${request.modelPath}: context ${context.contextSize} × ${parallel} sequences, ${context.currentThreads} threads, chat template: ${chatWrapper?.wrapperName ?? 'none'}`)

    const budgetAfter = (promptTokens: number, param: string) => {
      const budget = context.contextSize - promptTokens
      if (budget < 1)
        throw requestError(
          `the prompt is ${promptTokens} tokens, which leaves no room in this model's ${context.contextSize}-token context; shorten it, or relaunch the model with a larger --n_ctx.`,
          param,
        )
      return budget
    }

    /**
     * Runs one generation on a leased sequence and turns its callbacks into a stream of events. Generated
     * tokens are counted by the sequence's own meter: `onToken` re-emits text held back for stop-trigger
     * checks as re-tokenized pieces, so counting its calls over-counts.
     */
    async function* generate(
      signal: AbortSignal,
      run: (slot: Slot, onTextChunk: (text: string) => void) => Promise<{stopReason: string; promptTokens: number}>,
    ): AsyncGenerator<GenerationEvent> {
      const slot = await pool.acquire(signal)
      const queue = new EventQueue<GenerationEvent>()
      const outputBefore = slot.sequence.tokenMeter.usedOutputTokens
      const done = run(slot, (text) => text && queue.push({text, type: 'text'})).then(
        ({promptTokens, stopReason}) => {
          const completionTokens = slot.sequence.tokenMeter.usedOutputTokens - outputBefore
          log.info(`request finished: ${stopReason}, ${promptTokens} prompt + ${completionTokens} generated tokens`)
          queue.push({completionTokens, finishReason: finishReason(stopReason), promptTokens, type: 'done'})
          queue.end()
        },
        (error) => queue.fail(error),
      )
      try {
        yield* queue
      } finally {
        await done
        pool.release(slot)
      }
    }

    const operations: Record<string, (payload: unknown, signal: AbortSignal) => AsyncIterable<GenerationEvent>> = {
      complete: (payload, signal) => {
        const request = payload as CompletionPayload
        return generate(signal, async (slot, onTextChunk) => {
          const promptTokens = model.tokenize(request.prompt).length
          const options = sampling(request, budgetAfter(promptTokens, 'prompt'))
          slot.completion ??= new LlamaCompletion({contextSequence: slot.sequence})
          const result = await slot.completion.generateCompletionWithMeta(request.prompt, {...options, onTextChunk, signal, stopOnAbortSignal: true})
          return {promptTokens, stopReason: result.metadata.stopReason}
        })
      },
    }

    if (chatWrapper) {
      operations.chat = (payload, signal) => {
        const request = payload as ChatPayload
        return generate(signal, async (slot, onTextChunk) => {
          const history = toHistory(request.messages)
          const promptTokens = chatWrapper.generateContextState({chatHistory: history}).contextText.tokenize(model.tokenizer).length
          const options = sampling(request, budgetAfter(promptTokens, 'messages'))
          slot.chat ??= new LlamaChat({autoDisposeSequence: false, chatWrapper, contextSequence: slot.sequence})
          const result = await slot.chat.generateResponse(history, {...options, onTextChunk, signal, stopOnAbortSignal: true})
          return {promptTokens, stopReason: result.metadata.stopReason}
        })
      }
    }

    return {
      async dispose() {
        await context.dispose()
        await model.dispose()
        await llama.dispose()
      },
      info: {
        abilities: chatWrapper ? ['chat', 'generate'] : ['generate'],
        chatTemplate: chatWrapper?.wrapperName ?? null,
        contextLength: context.contextSize,
        parallel,
        threads: context.currentThreads,
      },
      operations,
    }
  },
}

export default host
