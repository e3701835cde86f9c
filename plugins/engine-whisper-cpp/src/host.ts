/**
 * Runs inside a model instance's own process: loads one ggml Whisper file with whisper.cpp (through
 * @fugood/whisper.node, whose prebuilt binaries cover CPU, CUDA and Vulkan) and transcribes or translates 16 kHz PCM.
 * `n_parallel` contexts serve that many requests at once; whisper.cpp runs one transcription per context.
 */
import type {WhisperContext} from '@fugood/whisper.node'
import type {AudioOperations, EngineHost, TranscribedWord, TranscriptionEvent, TranscriptionPayload} from 'service-toolkit'

import {availableParallelism} from 'node:os'

import {windowsOf} from './chunks.js'

const SAMPLE_RATE = 16_000

type WhisperOperations = Pick<AudioOperations, 'transcribe'>

/** Contexts lent to one request at a time, in arrival order. */
class ContextPool {
  private readonly waiting: Array<(context: WhisperContext) => void> = []
  constructor(private readonly free: WhisperContext[]) {}

  async lease(signal: AbortSignal): Promise<WhisperContext> {
    signal.throwIfAborted()
    const context = this.free.pop()
    if (context) return context
    return new Promise((resolve, reject) => {
      const take = (leased: WhisperContext) => {
        signal.removeEventListener('abort', leave)
        resolve(leased)
      }

      const leave = () => {
        this.waiting.splice(this.waiting.indexOf(take), 1)
        reject(signal.reason)
      }

      signal.addEventListener('abort', leave, {once: true})
      this.waiting.push(take)
    })
  }

  release(context: WhisperContext): void {
    const next = this.waiting.shift()
    if (next) next(context)
    else this.free.push(context)
  }
}

const seconds = (ms: number) => Math.round(ms) / 1000

type TokenSegment = {text: string; t0: number; t1: number}

type TranscribeJob = ReturnType<WhisperContext['transcribeData']>

/**
 * The job's result, or the signal's reason as soon as it aborts. whisper.node's promise never settles once a job
 * fails (its worker reports an error with one argument, which the promise's callback ignores), as every stopped job
 * does: waiting for it would keep the context leased, and every later request queued behind it, forever. The
 * context's own lock holds the next job until the stopped one's window is done.
 */
function settleOnAbort(job: TranscribeJob, signal: AbortSignal): TranscribeJob['promise'] {
  return new Promise((resolve, reject) => {
    const stop = () => {
      void job.stop()
      reject(signal.reason)
    }

    if (signal.aborted) return stop()
    signal.addEventListener('abort', stop, {once: true})
    job.promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop))
  })
}

/**
 * whisper.cpp with `max_len` 1 makes a segment of every token (its command line's word timestamps); a token that does
 * not begin with a space continues the word before it.
 */
function wordsOf(segments: TokenSegment[], at: (ms: number) => number): TranscribedWord[] {
  const words: TranscribedWord[] = []
  for (const {t0, t1, text} of segments) {
    const last = words.at(-1)
    if (last && text !== '' && !/^\s/.test(text) && !/^[\s\p{P}]*$/u.test(last.word)) {
      last.word += text
      last.end = at(t1)
    } else if (text.trim() !== '') {
      words.push({end: at(t1), start: at(t0), word: text.trim()})
    }
  }

  return words
}

/**
 * Segments from the token segments of a word-timestamped decode: a segment ends with a token that ends a sentence,
 * since `max_len` 1 leaves no trace of where whisper.cpp's own segments ended.
 */
function sentencesOf(tokens: TokenSegment[]): TokenSegment[] {
  const sentences: TokenSegment[] = []
  let current: TokenSegment | undefined
  for (const token of tokens) {
    current = current ? {...current, t1: token.t1, text: current.text + token.text} : {...token}
    if (/[.!?。！？]\s*$/u.test(token.text)) {
      sentences.push(current)
      current = undefined
    }
  }

  return current ? [...sentences, current] : sentences
}

const host: EngineHost<WhisperOperations> = {
  async load(request, {errors, log}) {
    const {addNativeLogListener, initWhisper, toggleNativeLog} = await import('@fugood/whisper.node')
    const {parameters} = request
    await toggleNativeLog(true)
    addNativeLogListener((level, text) => log.debug(`whisper.cpp ${level}: ${text.trimEnd()}`))
    const parallel = (parameters.n_parallel as number | undefined) ?? 1
    const threads = (parameters.n_threads as number | undefined) ?? Math.max(1, Math.floor(availableParallelism() / parallel))
    const contexts: WhisperContext[] = []
    try {
      for (let i = 0; i < parallel; i++)
        contexts.push(await initWhisper({filePath: request.modelPath, useFlashAttn: parameters.flash_attn as boolean | undefined, useGpu: parameters.use_gpu !== false}))
    } catch (error) {
      await Promise.all(contexts.map((context) => context.release()))
      throw errors.create(400, 'invalid_request', `whisper.cpp could not load ${request.modelName}: ${(error as Error).message}. Is it a ggml Whisper file (ggml-*.bin)?`, 'model_path')
    }

    const pool = new ContextPool([...contexts])
    // Xinference's per-model defaults: what a request leaves out, the family may set (a fixed language, a prompt).
    const defaults = (request.family.default_transcription_config ?? {}) as {language?: string; prompt?: string; temperature?: number}

    async function* transcribe(payload: TranscriptionPayload, signal: AbortSignal): AsyncGenerator<TranscriptionEvent> {
      const pcm = Buffer.from(payload.pcm, 'base64')
      const samples = new Int16Array(pcm.buffer, pcm.byteOffset, Math.floor(pcm.byteLength / 2))
      const temperature = payload.temperature ?? defaults.temperature
      const options = {maxThreads: threads, translate: payload.translate, ...(temperature === undefined ? {} : {temperature})}
      const context = await pool.lease(signal)
      let language = payload.language ?? defaults.language
      try {
        let prompt = payload.prompt ?? defaults.prompt
        for (const [start, end] of windowsOf(samples, SAMPLE_RATE)) {
          signal.throwIfAborted()
          // A copy: the binding reads an ArrayBuffer whole, and `samples` shares its buffer with the rest.
          const window = samples.slice(start, end).buffer
          const offset = start / SAMPLE_RATE
          const run = (extra: Record<string, unknown>) => settleOnAbort(context.transcribeData(window, {...options, language: language ?? 'auto', ...(prompt ? {prompt} : {}), ...extra}), signal)

          // Words and segments come from one decode: a second one for the words could sample other text (Whisper
          // falls back to sampling at a higher temperature where greedy decoding fails), and would cost as much again.
          const result = await run(payload.words ? {maxLen: 1, tokenTimestamps: true} : {})
          // The first window decides the language for the rest, as Whisper does for a whole file.
          language ??= result.language
          // Whisper reads 30 s windows, padded with silence, and may place a time in the padding.
          const windowEnd = end / SAMPLE_RATE
          const at = (ms: number) => Math.min(offset + seconds(ms), windowEnd)
          for (const segment of payload.words ? sentencesOf(result.segments) : result.segments)
            if (segment.text.trim() !== '') yield {end: at(segment.t1), start: at(segment.t0), text: segment.text, type: 'segment'}
          if (payload.words) yield {type: 'words', words: wordsOf(result.segments, at)}
          prompt = result.result.slice(-200)
        }
      } finally {
        pool.release(context)
      }

      yield {duration: samples.length / SAMPLE_RATE, language: language ?? 'en', type: 'done'}
    }

    return {
      async dispose() {
        await Promise.all(contexts.map((context) => context.release()))
      },
      info: {abilities: ['audio2text']},
      operations: {transcribe},
    }
  },
}

export default host
