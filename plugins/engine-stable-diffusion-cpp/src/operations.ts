/**
 * The program's one operation as the image type declares it: POSTs the payload and reads the program's JSON lines back
 * as events as they come (a step done, then the images). The request's signal closes the connection when the client
 * goes away, and the program then kills the generation at its next step.
 */
import type {ErrorFactory, ExternalEndpoint, ExternalOperations, ImageGenerationEvent, ImageGenerationPayload, ImageOperations} from 'service-toolkit'

interface ProgramError {
  type?: 'error'
  status?: number
  message?: string
  param?: string | null
}

const refusal = (errors: ErrorFactory, {message, param, status}: ProgramError) =>
  status === 400
    ? errors.badRequest(message ?? 'the model refused the request', param ?? undefined)
    : errors.create(500, 'generation_failed', `the stable-diffusion.cpp program failed: ${message ?? 'no reason given'}`)

async function* generateImage(errors: ErrorFactory, payload: ImageGenerationPayload, {baseUrl, signal}: ExternalEndpoint): AsyncGenerator<ImageGenerationEvent> {
  const response = await fetch(`${baseUrl}/generate_image`, {body: JSON.stringify(payload), headers: {'content-type': 'application/json'}, method: 'POST', signal})
  if (!response.ok) throw refusal(errors, {...((await response.json().catch(() => ({}))) as {error?: ProgramError}).error, status: response.status})
  let pending = ''
  for await (const text of response.body!.pipeThrough(new TextDecoderStream())) {
    const lines = (pending + text).split('\n')
    pending = lines.pop()!
    for (const line of lines.filter((each) => each.trim())) {
      const event = JSON.parse(line) as ImageGenerationEvent | ProgramError
      if (event.type === 'error') throw refusal(errors, event)
      yield event as ImageGenerationEvent
    }
  }
}

export const stableDiffusionOperations = (errors: ErrorFactory): Partial<ExternalOperations<ImageOperations>> => ({
  generate_image: (payload, endpoint) => generateImage(errors, payload, endpoint),
})
