/**
 * The shapes of OpenAI's transcription answers, built from the engine's segments and words: `json` ({text}),
 * `text`, `srt` and `vtt` subtitles, and `verbose_json` with the language, duration, segments and words.
 */
import type {TranscribedWord} from 'service-toolkit'

import {deflateSync} from 'node:zlib'

import {languageName} from './languages.js'

export const RESPONSE_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number]

export interface Transcript {
  segments: Array<{start: number; end: number; text: string}>
  words: TranscribedWord[]
  language: string
  duration: number
}

export interface TranscriptOptions {
  format: ResponseFormat
  /** `timestamp_granularities[]`: what verbose_json lists. */
  granularities: ReadonlySet<'segment' | 'word'>
  task: 'transcribe' | 'translate'
  temperature: number
}

const textOf = (transcript: Transcript) => transcript.segments.map((segment) => segment.text).join('').trim()

/** `hh:mm:ss,mmm` (SubRip) or `hh:mm:ss.mmm` (WebVTT). */
function timestamp(seconds: number, separator: ',' | '.'): string {
  const ms = Math.round(seconds * 1000)
  const pad = (value: number, width = 2) => String(value).padStart(width, '0')
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`
}

/** How much zlib shrinks the text, as Whisper's `compression_ratio` (a repetitive, looping text shrinks most). */
function compressionRatio(text: string): number {
  const bytes = Buffer.from(text, 'utf8')
  return bytes.length === 0 ? 0 : bytes.length / deflateSync(bytes).length
}

/**
 * The response body and its media type. whisper.cpp's binding gives neither token ids nor log-probabilities nor a
 * no-speech probability, so `tokens` is empty and `avg_logprob` and `no_speech_prob` are 0 in verbose_json.
 */
export function renderTranscript(transcript: Transcript, {format, granularities, task, temperature}: TranscriptOptions): {body: unknown; contentType?: string} {
  const text = textOf(transcript)
  switch (format) {
    case 'json': {
      return {body: {text, usage: {seconds: Math.ceil(transcript.duration), type: 'duration'}}}
    }

    case 'text': {
      return {body: `${text}\n`, contentType: 'text/plain; charset=utf-8'}
    }

    case 'srt': {
      const cues = transcript.segments.map((s, i) => `${i + 1}\n${timestamp(s.start, ',')} --> ${timestamp(s.end, ',')}\n${s.text.trim()}\n`)
      return {body: cues.join('\n'), contentType: 'application/x-subrip; charset=utf-8'}
    }

    case 'vtt': {
      const cues = transcript.segments.map((s) => `${timestamp(s.start, '.')} --> ${timestamp(s.end, '.')}\n${s.text.trim()}\n`)
      return {body: ['WEBVTT\n', ...cues].join('\n'), contentType: 'text/vtt; charset=utf-8'}
    }

    case 'verbose_json': {
      return {
        body: {
          duration: transcript.duration,
          // A translation's text is English whatever was spoken, and OpenAI's translation answer says so.
          language: task === 'translate' ? 'english' : languageName(transcript.language),
          ...(granularities.has('segment')
            ? {
                segments: transcript.segments.map((s, id) => ({
                  avg_logprob: 0,
                  compression_ratio: compressionRatio(s.text),
                  end: s.end,
                  id,
                  no_speech_prob: 0,
                  seek: 0,
                  start: s.start,
                  temperature,
                  text: s.text,
                  tokens: [],
                })),
              }
            : {}),
          task,
          text,
          usage: {seconds: Math.ceil(transcript.duration), type: 'duration'},
          ...(granularities.has('word') ? {words: transcript.words} : {}),
        },
      }
    }
  }
}
