/**
 * `speak` for text-to-speech programs that answer `POST /speak` {input, voice, speed} with raw 16-bit mono PCM
 * (its rate in `X-Sample-Rate`), sent in chunks as it is made, and refuse with OpenAI's error body (the VITS and
 * Piper engines' programs). Each chunk goes on the moment it arrives; the signal closes the connection, which the
 * program takes as the cue to stop.
 */
import type {SpeechEvent, SpeechPayload} from './audio.js'
import type {ExternalEndpoint, ExternalOperations} from './external-engine.js'
import type {AudioOperations} from './operations.js'

import {errorFactory} from './errors.js'

export type PcmSpeechOperations = ExternalOperations<Pick<AudioOperations, 'speak'>>

async function* speak(payload: SpeechPayload, {baseUrl, signal}: ExternalEndpoint): AsyncGenerator<SpeechEvent> {
  const response = await fetch(`${baseUrl}/speak`, {body: JSON.stringify(payload), headers: {'content-type': 'application/json'}, method: 'POST', signal})
  if (!response.ok) {
    // A refusal is OpenAI's error body; a program that fails otherwise may answer anything, which is then its reason.
    const text = await response.text()
    let error: {message?: unknown; param?: unknown} | undefined
    try {
      error = (JSON.parse(text) as {error?: {message?: unknown; param?: unknown}}).error
    } catch {}

    const message = typeof error?.message === 'string' ? error.message : text.trim().slice(0, 500) || `status ${response.status}`
    const param = typeof error?.param === 'string' ? error.param : undefined
    if (response.status >= 400 && response.status < 500) throw errorFactory.create(response.status, 'invalid_request', message, param)
    throw errorFactory.create(500, 'generation_failed', `the speech program failed: ${message}`)
  }

  yield {sampleRate: Number(response.headers.get('x-sample-rate')), type: 'format'}
  for await (const chunk of response.body!) yield {pcm: Buffer.from(chunk).toString('base64'), type: 'audio'}
  yield {type: 'done'}
}

export function pcmSpeechOperations(): PcmSpeechOperations {
  return {speak}
}
