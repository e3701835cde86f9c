/**
 * The client's side of the audio routes: the multipart form of a transcription or translation, and its answer, which
 * is JSON for `json` and `verbose_json` and text for `text`, `srt` and `vtt`, as OpenAI's API answers.
 */
export interface TranscriptionOptions {
  /** The file name the service is told (its extension hints the container); `audio` when absent. */
  fileName?: string
  /** ISO-639-1 code of the spoken language; detected when absent (transcriptions only). */
  language?: string
  prompt?: string
  temperature?: number
  response_format?: 'json' | 'text' | 'srt' | 'verbose_json' | 'vtt'
  timestamp_granularities?: Array<'segment' | 'word'>
  /** English text whatever the language spoken (`POST /v1/audio/translations`). */
  translate?: boolean
}

export interface TranscriptionSegment {
  id: number
  start: number
  end: number
  text: string
  [field: string]: unknown
}

/** `json` gives `{text}`; `verbose_json` adds the language, duration, segments and (when asked) words. */
export interface Transcription {
  text: string
  language?: string
  duration?: number
  segments?: TranscriptionSegment[]
  words?: Array<{word: string; start: number; end: number}>
  usage?: {type: 'duration'; seconds: number}
}

export function transcriptionRequest(model: string, audio: Blob, options: TranscriptionOptions): {path: string; form: FormData} {
  const {fileName = 'audio', timestamp_granularities: granularities, translate, ...fields} = options
  const form = new FormData()
  form.append('file', audio, fileName)
  form.append('model', model)
  for (const [name, value] of Object.entries(fields)) if (value !== undefined && !(translate && name === 'language')) form.append(name, String(value))
  for (const granularity of granularities ?? []) form.append('timestamp_granularities[]', granularity)
  return {form, path: translate ? '/v1/audio/translations' : '/v1/audio/transcriptions'}
}

export async function transcriptionReply(response: Response): Promise<Transcription | string> {
  return (response.headers.get('content-type') ?? '').includes('application/json') ? ((await response.json()) as Transcription) : response.text()
}

export interface SpeechOptions {
  /** One of the model's voices; `default` for a single-voice model. */
  voice: string
  response_format?: 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm'
  /** 0.25 to 4. */
  speed?: number
}

/** The audio's bytes as the service sends them, which is as the model speaks. */
export async function* speechBytes(response: Response): AsyncGenerator<Uint8Array> {
  const reader = response.body!.getReader()
  try {
    while (true) {
      const {done, value} = await reader.read()
      if (done) return
      yield value
    }
  } finally {
    // Stopping early (a consumer that breaks off) cancels the request, which stops the model.
    await reader.cancel().catch(() => {})
  }
}
