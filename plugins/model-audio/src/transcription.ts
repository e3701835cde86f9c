/**
 * `POST /v1/audio/transcriptions` and `/v1/audio/translations`, OpenAI's shapes: a multipart upload (`file`, `model`,
 * `language`, `prompt`, `temperature`, `response_format`, `timestamp_granularities[]`) decoded by FFmpeg into 16 kHz
 * PCM and transcribed by the model's engine. The upload and the PCM live only while the request does.
 */
import type {AudioOperations, Infer, KernelApi, RouteDefinition, TranscribedWord} from 'service-toolkit'

import {decodeUpload} from './ffmpeg.js'
import {isLanguageCode} from './languages.js'
import {renderTranscript, RESPONSE_FORMATS, type ResponseFormat, type Transcript} from './transcript-formats.js'

/** OpenAI's upload limit. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024
/** The longest audio decoded and transcribed in one request, by default 25 minutes (OpenAI's limit for its newer models). */
const DEFAULT_MAX_SECONDS = 1500
const GRANULARITIES = ['segment', 'word'] as const

function transcriptionSchema({media, schema: s}: KernelApi, translation: boolean) {
  const granularity = s.string({enum: GRANULARITIES})
  const granularities = s.optional(s.union([granularity, s.array(granularity, {maxItems: 2})], '"segment", "word" or both'))
  return s.object(
    {
      ...(translation
        ? {}
        : {
            language: s.optional(s.string({description: 'ISO-639-1 code of the spoken language (e.g. en); detected when absent.'})),
            'timestamp_granularities[]': granularities,
            timestamp_granularities: granularities,
          }),
      model: s.string({description: 'Uid of a running audio2text model.', minLength: 1}),
      prompt: s.optional(s.string({description: 'Text that comes before the audio (spellings, names), in its language.', maxLength: 4000})),
      response_format: s.optional(s.string({description: 'json (default), text, srt, verbose_json or vtt.', enum: RESPONSE_FORMATS})),
      // Multipart fields are text: read as JavaScript reads a number, so 1e-7 (as the openai client writes 0.0000001) is one.
      temperature: s.optional(media.formNumber({description: 'Sampling temperature, 0 to 1 (default: 0, raised by the engine when decoding fails).', maximum: 1, minimum: 0})),
    },
    {title: translation ? 'CreateTranslationRequest' : 'CreateTranscriptionRequest', unknownKeys: 'strip'},
  )
}

type TranscriptionRequest = Infer<ReturnType<typeof transcriptionSchema>> & {language?: string; 'timestamp_granularities[]'?: string | string[]; timestamp_granularities?: string | string[]}

const maxSeconds = () => {
  const configured = Number(process.env.SERVICE_AUDIO_MAX_SECONDS)
  return Number.isFinite(configured) && configured > 0 ? configured : DEFAULT_MAX_SECONDS
}

function transcriptionRoute(api: KernelApi, translation: boolean): RouteDefinition<TranscriptionRequest> {
  return {
    body: transcriptionSchema(api, translation) as never,
    example: {body: {model: 'tiny-random-whisper', response_format: 'json'}},
    async handler({body, files, models, signal}) {
      const model = models.get<AudioOperations>(body.model)
      api.requireAbility(model, 'audio2text', translation ? 'translate speech' : 'transcribe speech')
      if (body.language !== undefined && !isLanguageCode(body.language))
        throw api.errors.badRequest(`\`language\` "${body.language}" is not one Whisper knows; give an ISO-639-1 code such as en, de or zh, or leave it out to detect it.`, 'language')
      const asked = [body['timestamp_granularities[]'] ?? body.timestamp_granularities ?? 'segment'].flat()
      const format = (body.response_format ?? 'json') as ResponseFormat
      if (asked.includes('word') && format !== 'verbose_json')
        throw api.errors.badRequest('`timestamp_granularities[]` word needs `response_format` verbose_json, the only format that carries words.', 'timestamp_granularities[]')
      const [file] = files.file
      if (file.size === 0) throw api.errors.badRequest('`file` is empty; send a recording.', 'file')
      const pcm = await decodeUpload(api, file.path, maxSeconds(), signal)
      const {temperature} = body
      const payload = {
        language: body.language,
        pcm: pcm.toString('base64'),
        prompt: body.prompt,
        temperature,
        translate: translation,
        words: asked.includes('word'),
      }
      const transcript: Transcript = {duration: 0, language: body.language ?? 'en', segments: [], words: []}
      for await (const event of model.invoke('transcribe', payload, signal)) {
        if (event.type === 'segment') transcript.segments.push({end: event.end, start: event.start, text: event.text})
        else if (event.type === 'words') transcript.words.push(...(event.words as TranscribedWord[]))
        else {
          transcript.duration = event.duration
          transcript.language = event.language
        }
      }

      const granularities = new Set(asked as Array<'segment' | 'word'>)
      const {body: response, contentType} = renderTranscript(transcript, {format, granularities, task: translation ? 'translate' : 'transcribe', temperature: temperature ?? 0})
      return {body: response, headers: contentType ? {'Content-Type': contentType} : undefined, kind: 'json'}
    },
    method: 'POST',
    multipart: {files: {file: {description: 'The audio: flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav or webm.', required: true}}, maxFileBytes: MAX_UPLOAD_BYTES},
    path: translation ? '/v1/audio/translations' : '/v1/audio/transcriptions',
    permission: 'models:read',
    produces: ['application/json', 'text/plain', 'application/x-subrip', 'text/vtt'],
    response: TRANSCRIPT_JSON,
    summary: translation ? 'Translate speech into English text (OpenAI)' : 'Transcribe speech into text (OpenAI)',
    tag: 'audio',
  }
}

const SEGMENT = {
  properties: {end: {type: 'number'}, id: {type: 'integer'}, start: {type: 'number'}, text: {type: 'string'}},
  required: ['id', 'start', 'end', 'text'],
  type: 'object',
}
const WORD = {properties: {end: {type: 'number'}, start: {type: 'number'}, word: {type: 'string'}}, required: ['word', 'start', 'end'], type: 'object'}

/** The JSON answer: `json`'s `{text, usage}`, or `verbose_json`'s with language, duration, segments and words. */
const TRANSCRIPT_JSON = {
  properties: {
    duration: {type: 'number'},
    language: {type: 'string'},
    segments: {items: SEGMENT, type: 'array'},
    task: {type: 'string'},
    text: {type: 'string'},
    usage: {properties: {seconds: {type: 'number'}, type: {type: 'string'}}, type: 'object'},
    words: {items: WORD, type: 'array'},
  },
  required: ['text'],
  title: 'Transcription',
  type: 'object',
}

export const transcriptionRoutes = (api: KernelApi) => [transcriptionRoute(api, false), transcriptionRoute(api, true)]
