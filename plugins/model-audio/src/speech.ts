/**
 * `POST /v1/audio/speech`, OpenAI's shape: `input` (at most 4096 characters), `voice`, `response_format` (mp3, opus,
 * aac, flac, wav, pcm), `speed` (0.25 to 4); the audio streams to the client as the engine makes it, one sentence at
 * a time. The voice is the model's to judge: an unknown one is a 400 naming `voice` before any audio is sent, as is
 * a missing FFmpeg's 500 naming `response_format`.
 */
import type {AudioOperations, Infer, KernelApi, RouteDefinition, SpeechEvent} from 'service-toolkit'

import {contentTypeOf, encodeSpeech, SPEECH_FORMATS, type SpeechFormat} from './speech-encoding.js'

/** OpenAI's limit on `input`. */
export const MAX_SPEECH_INPUT = 4096
/** The voice every speech engine takes for the model's own default one. */
const DEFAULT_VOICE = 'default'

/** `input`: at most MAX_SPEECH_INPUT characters, and not only whitespace, which the engine would answer with silence. */
function speechInput({errors, schema: s}: KernelApi) {
  const documented = s.string({description: `The text to speak, at most ${MAX_SPEECH_INPUT} characters, not only whitespace.`, maxLength: MAX_SPEECH_INPUT, minLength: 1})
  return {
    ...documented,
    parse(value: unknown, path?: string) {
      const input = documented.parse(value, path)
      if (input.trim() === '') throw errors.badRequest('`input` has nothing to speak: it is only whitespace.', 'input')
      return input
    },
  }
}

function speechSchema(api: KernelApi) {
  const s = api.schema
  return s.object(
    {
      input: speechInput(api),
      model: s.string({description: 'Uid of a running text2audio model.', minLength: 1}),
      response_format: s.optional(s.string({description: 'mp3 (default), opus, aac, flac, wav or pcm (16-bit 24 kHz mono).', enum: SPEECH_FORMATS})),
      speed: s.optional(s.number({description: 'Speaking speed, 0.25 to 4 (default 1).', maximum: 4, minimum: 0.25})),
      kwargs: s.optional(s.nullable(s.jsonText(s.object({}), {description: "Xinference's further arguments, as JSON text (its clients send \"{}\"); the speech engines here take none."}))),
      stream: s.optional(s.nullable(s.boolean({description: "Xinference's: the audio always streams as it is made, so true and false answer alike."}))),
      stream_format: s.optional(s.string({description: 'audio (default): the audio file itself, streamed as it is made.', enum: ['audio']})),
      voice: s.optional(s.string({description: "One of the model's voices; `default`, empty (as Xinference's clients send it) or absent for the model's default voice.", maxLength: 256})),
    },
    {title: 'CreateSpeechRequest'},
  )
}

type SpeechRequest = Infer<ReturnType<typeof speechSchema>>

/** The engine's PCM chunks; the first event it gave was the format. */
async function* pcmOf(events: AsyncIterator<SpeechEvent>): AsyncGenerator<Buffer> {
  try {
    while (true) {
      const next = await events.next()
      if (next.done || next.value.type === 'done') return
      if (next.value.type === 'audio') yield Buffer.from(next.value.pcm, 'base64')
    }
  } finally {
    await events.return?.()
  }
}

/** `ffmpeg`: FFmpeg's program, for the tests to name a missing one. */
export function speechRoute(api: KernelApi, {ffmpeg}: {ffmpeg?: string} = {}): RouteDefinition<SpeechRequest> {
  return {
    body: speechSchema(api),
    example: {body: {input: 'Hello there.', model: 'tiny-random-piper', response_format: 'wav', voice: 'alloy'}},
    async handler({body, models, signal}) {
      const model = models.get<AudioOperations>(body.model)
      api.requireAbility(model, 'text2audio', 'speak text')
      // The encoder stops the engine itself when its reader goes away: the iterator it returns may be all it is told.
      const engine = new AbortController()
      const events = model.invoke('speak', {input: body.input, speed: body.speed ?? 1, voice: body.voice || DEFAULT_VOICE}, AbortSignal.any([signal, engine.signal]))[Symbol.asyncIterator]()
      // The engine's first event says it took the request (the voice is known), so a refusal is still an HTTP error.
      const first = await events.next()
      if (first.done || first.value.type !== 'format') throw new Error('the engine sent no audio format before its audio')
      const format = (body.response_format ?? 'mp3') as SpeechFormat
      try {
        const audio = await encodeSpeech(api, pcmOf(events), {format, program: ffmpeg, sampleRate: first.value.sampleRate, stopEngine: () => engine.abort()})
        return {body: audio, contentType: contentTypeOf(format), kind: 'bytes'}
      } catch (error) {
        await events.return?.()
        throw error
      }
    },
    method: 'POST',
    path: '/v1/audio/speech',
    permission: 'models:read',
    produces: SPEECH_FORMATS.map((format) => contentTypeOf(format)),
    response: {format: 'binary', type: 'string'},
    summary: 'Speak text (OpenAI), streaming the audio as it is made',
    tag: 'audio',
  }
}
