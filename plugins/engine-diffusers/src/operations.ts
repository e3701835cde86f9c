/**
 * The diffusers program's operations as the image and video types declare them: each POSTs its payload and reads the
 * program's JSON lines back as events, as they come (a step done, then the results). The request's signal closes the
 * connection when the client goes away, which stops the generation at its next step.
 */
import type {ErrorFactory, ExternalEndpoint, ExternalOperations, ImageOperations, VideoOperations} from 'service-toolkit'

interface ProgramError {
  type?: 'error'
  status?: number
  message?: string
  param?: string | null
}

function failure(errors: ErrorFactory, {message, param, status}: ProgramError) {
  return status === 400
    ? errors.badRequest(message ?? 'the model refused the request', param ?? undefined)
    : errors.create(500, 'generation_failed', `the diffusers program failed: ${message ?? 'no reason given'}`)
}

async function* jsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  let buffered = ''
  for await (const text of body.pipeThrough(new TextDecoderStream())) {
    buffered += text
    let end
    while ((end = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(end + 1)
      if (line.trim()) yield JSON.parse(line)
    }
  }
}

async function* call<Event>(errors: ErrorFactory, path: string, payload: unknown, {baseUrl, signal}: ExternalEndpoint): AsyncGenerator<Event> {
  const response = await fetch(`${baseUrl}${path}`, {body: JSON.stringify(payload), headers: {'content-type': 'application/json'}, method: 'POST', signal})
  if (!response.ok) {
    const reply = (await response.json().catch(() => ({}))) as {error?: ProgramError}
    throw failure(errors, {...reply.error, status: response.status})
  }

  for await (const event of jsonLines(response.body!)) {
    if ((event as ProgramError).type === 'error') throw failure(errors, event as ProgramError)
    yield event as Event
  }
}

export function diffusersOperations(errors: ErrorFactory): Partial<ExternalOperations<ImageOperations & VideoOperations>> {
  return {
    generate_image: (payload, endpoint) => call(errors, '/generate_image', payload, endpoint),
    generate_video: (payload, endpoint) => call(errors, '/generate_video', payload, endpoint),
  }
}
