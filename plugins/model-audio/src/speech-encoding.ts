/**
 * Encodes the engine's PCM into the `response_format` of OpenAI's speech route with FFmpeg, streaming: PCM goes into
 * `ffmpeg`'s stdin as the engine makes it and the encoded bytes come out of its stdout as FFmpeg writes them. Every
 * format is resampled to 24 kHz, the rate OpenAI's `pcm` is defined at.
 */
import {PassThrough} from 'node:stream'

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

/**
 * The encoded audio of `pcm` (16-bit mono at `sampleRate`), chunk by chunk. Returning early (the client went away)
 * kills FFmpeg and returns `pcm`, which stops the engine.
 */
export async function* encodeSpeech(pcm: AsyncIterable<Buffer>, sampleRate: number, format: SpeechFormat): AsyncGenerator<Uint8Array> {
  const {execa} = await import('execa')
  const stop = new AbortController()
  const input = new PassThrough()
  const encoder = execa('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-f', 's16le', '-ar', String(sampleRate), '-ac', '1', '-i', 'pipe:0', '-ar', String(OUTPUT_RATE), ...FORMATS[format].args, 'pipe:1'], {
    buffer: false,
    cancelSignal: stop.signal,
    input,
    reject: false,
    stdout: 'pipe',
  })
  const feeding = (async () => {
    try {
      for await (const chunk of pcm) {
        if (!input.write(chunk)) await new Promise((resolve) => input.once('drain', resolve).once('close', resolve))
        // FFmpeg was stopped (the client went away): leaving the loop returns the engine's stream.
        if (input.destroyed) return
      }

      input.end()
    } catch (error) {
      input.destroy()
      stop.abort()
      throw error
    }
  })()
  // Handled at once: it may fail (the client went away) while FFmpeg's output is being read, before it is awaited.
  feeding.catch(() => {})
  try {
    for await (const chunk of encoder.stdout!) yield chunk as Uint8Array
    await feeding
    const result = await encoder
    if (result.exitCode !== 0) throw new Error(`FFmpeg could not encode ${format}: ${String(result.stderr).trim().split('\n').at(-1)}`)
  } finally {
    stop.abort()
    input.destroy()
  }
}
