/**
 * Encodes the engine's PCM into the `response_format` of OpenAI's speech route with FFmpeg, streaming: PCM goes into
 * `ffmpeg`'s stdin as the engine makes it and the encoded bytes come out of its stdout as FFmpeg writes them. Every
 * format is resampled to 24 kHz, the rate OpenAI's `pcm` is defined at, so wav and pcm need FFmpeg as the others do.
 */
import type {KernelApi} from 'service-toolkit'

import {PassThrough} from 'node:stream'

import {FFMPEG, missingProgram} from './ffmpeg.js'

export const SPEECH_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const
export type SpeechFormat = (typeof SPEECH_FORMATS)[number]

const OUTPUT_RATE = 24_000

/** FFmpeg's output options and the media type OpenAI answers with, per format. */
const FORMATS: Record<SpeechFormat, {args: string[]; contentType: string}> = {
  aac: {args: ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'], contentType: 'audio/aac'},
  flac: {args: ['-c:a', 'flac', '-f', 'flac'], contentType: 'audio/flac'},
  mp3: {args: ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'], contentType: 'audio/mpeg'},
  opus: {args: ['-c:a', 'libopus', '-b:a', '32k', '-f', 'ogg'], contentType: 'audio/opus'},
  pcm: {args: ['-f', 's16le'], contentType: 'audio/pcm'},
  // A streamed WAV cannot know its length up front; FFmpeg writes the header's sizes as the largest value, which
  // players read as "until the end".
  wav: {args: ['-c:a', 'pcm_s16le', '-f', 'wav'], contentType: 'audio/wav'},
}

export const contentTypeOf = (format: SpeechFormat) => FORMATS[format].contentType

export interface SpeechEncoding {
  format: SpeechFormat
  /** The PCM's rate, as the engine's `format` event gave it. */
  sampleRate: number
  /** Ends the engine's work now; called when the audio stops before its end, which the engine cannot see itself. */
  stopEngine: () => void
  /** FFmpeg's program; the tests name a missing one. */
  program?: string
}

/** Feeds `pcm` to FFmpeg's stdin, leaving the loop (which returns the engine's stream) once FFmpeg is stopped. */
async function feed(pcm: AsyncIterable<Buffer>, input: PassThrough): Promise<void> {
  for await (const chunk of pcm) {
    if (input.destroyed) return
    // A destroyed stream refuses the write and emits neither 'drain' nor another 'close', so that wait would never end.
    if (!input.write(chunk) && !input.destroyed) await new Promise((resolve) => input.once('drain', resolve).once('close', resolve))
  }

  input.end()
}

/**
 * The encoded audio of `pcm` (16-bit mono), chunk by chunk, once FFmpeg has started: a missing FFmpeg is an error
 * here, before the route answers, rather than a 200 whose body breaks off. Returning the iterator (the client went
 * away) kills FFmpeg and stops the engine at once.
 */
export async function encodeSpeech(api: KernelApi, pcm: AsyncIterable<Buffer>, encoding: SpeechEncoding): Promise<AsyncIterableIterator<Uint8Array>> {
  const {format, program = FFMPEG, sampleRate, stopEngine} = encoding
  const {execa} = await import('execa')
  const kill = new AbortController()
  const input = new PassThrough()
  const encoder = execa(program, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-f', 's16le', '-ar', String(sampleRate), '-ac', '1', '-i', 'pipe:0', '-ar', String(OUTPUT_RATE), ...FORMATS[format].args, 'pipe:1'], {
    // stderr is kept for the reason of a failure (FFmpeg logs only errors); stdout goes to the client as it comes.
    buffer: {stderr: true, stdout: false},
    cancelSignal: kill.signal,
    input,
    reject: false,
    stdout: 'pipe',
  })
  // A process that did not start has no pid.
  if (encoder.pid === undefined) {
    input.destroy()
    const failure = (await encoder) as {code?: string; message: string}
    if (failure.code === 'ENOENT') throw missingProgram(api, `encoding speech as \`response_format\` ${format} (or any other format: each is resampled to ${OUTPUT_RATE / 1000} kHz)`)
    throw new Error(`FFmpeg could not start: ${failure.message}`)
  }

  const stop = () => {
    kill.abort()
    input.destroy()
    stopEngine()
  }

  const feeding = feed(pcm, input)
  // Handled at once: the engine may fail while FFmpeg's output is being read, before `feeding` is awaited.
  feeding.catch(stop)
  const output = encoder.stdout![Symbol.asyncIterator]()
  const audio: AsyncIterableIterator<Uint8Array> = {
    [Symbol.asyncIterator]() {
      return this
    },
    async next() {
      try {
        const chunk = await output.next()
        if (!chunk.done) return {done: false, value: chunk.value as Uint8Array}
        await feeding
        const result = await encoder
        if (result.exitCode !== 0 && !kill.signal.aborted) throw new Error(`FFmpeg could not encode ${format}: ${String(result.stderr).trim().split('\n').at(-1)}`)
        return {done: true, value: undefined}
      } catch (error) {
        stop()
        throw error
      }
    },
    // Not an async generator's return(), which would wait for the pending next(): that waits on FFmpeg's output,
    // FFmpeg on the engine's next sentence, and the engine on that sentence or on the request's abort.
    async return() {
      stop()
      return {done: true, value: undefined}
    },
  }
  return audio
}
