/**
 * Engine-native request and event types of audio models, shared by the `audio` model type (which speaks OpenAI's
 * audio API on the wire) and the engines that run them. Audio crosses processes (and, in a cluster, HTTP) as
 * base64 text of 16-bit little-endian PCM, one channel: the route decodes uploads and encodes replies, so an engine
 * never sees a container format.
 */

/** Speech to text (`audio2text`). */
export interface TranscriptionPayload {
  /** 16 kHz mono s16le PCM, base64. */
  pcm: string
  /** ISO-639-1 code of the spoken language; absent: the engine detects it. */
  language?: string
  /** Text that continues before the audio (names, spelling), as OpenAI's `prompt`. */
  prompt?: string
  temperature?: number
  /** English text whatever the spoken language (OpenAI's translations route). */
  translate: boolean
  /** Also give each word with its times. */
  words: boolean
}

export interface TranscribedWord {
  word: string
  /** Seconds from the start of the audio. */
  start: number
  end: number
}

/**
 * `transcribe` yields a `segment` per stretch of speech in order (with its words when asked), then one `done` with
 * the language spoken (ISO-639-1 code) and the audio's length in seconds.
 */
export type TranscriptionEvent =
  | {type: 'segment'; start: number; end: number; text: string}
  | {type: 'words'; words: TranscribedWord[]}
  | {type: 'done'; language: string; duration: number}

/** Text to speech (`text2audio`). */
export interface SpeechPayload {
  input: string
  voice: string
  /** 0.25 to 4, 1 being the voice's own pace. */
  speed: number
}

/**
 * `speak` first yields `format` (the PCM's sample rate), then `audio` chunks of s16le mono PCM (base64) as the engine
 * makes them, then one `done`.
 */
export type SpeechEvent = {type: 'format'; sampleRate: number} | {type: 'audio'; pcm: string} | {type: 'done'}
