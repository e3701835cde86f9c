/**
 * `speak` for text-to-speech programs that answer `POST /speak` {input, voice, speed} with raw 16-bit mono PCM
 * (its rate in `X-Sample-Rate`), sent in chunks as it is made, and refuse with OpenAI's error body (the VITS and
 * Piper engines' programs). Each chunk goes on the moment it arrives; the signal closes the connection, which the
 * program takes as the cue to stop.
 */
import type {SpeechEvent, SpeechPayload} from './audio.js'
import type {ExternalEndpoint, ExternalOperations} from './external-engine.js'
import type {AudioOperations} from './operations.js'

export type PcmSpeechOperations = ExternalOperations<Pick<AudioOperations, 'speak'>>

async function* speak(payload: SpeechPayload, {baseUrl, signal}: ExternalEndpoint): AsyncGenerator<SpeechEvent> {
  const response = await fetch(`${baseUrl}/speak`, {body: JSON.stringify(payload), headers: {'content-type': 'application/json'}, method: 'POST', signal})
  if (!response.ok) {
    const {error} = (await response.json()) as {error: {message: string; param?: string}}
    throw Object.assign(new Error(error.message), {code: 'invalid_request', param: error.param, status: response.status})
  }

  yield {sampleRate: Number(response.headers.get('x-sample-rate')), type: 'format'}
  for await (const chunk of response.body!) yield {pcm: Buffer.from(chunk).toString('base64'), type: 'audio'}
  yield {type: 'done'}
}

export function pcmSpeechOperations(): PcmSpeechOperations {
  return {speak}
}
