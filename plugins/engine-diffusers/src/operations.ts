/**
 * The diffusers program's operations as the image and video types declare them: each POSTs its payload and reads the
 * program's JSON lines back as events, as they come (a step done, then the results), through the kernel's
 * `api.external.jsonLines`. The request's signal closes the connection when the client goes away, which stops the
 * generation at its next step.
 */
import type {ExternalOperations, ImageOperations, JsonLinesCall, VideoOperations} from 'service-toolkit'

export function diffusersOperations(call: JsonLinesCall): Partial<ExternalOperations<ImageOperations & VideoOperations>> {
  return {
    generate_image: (payload, endpoint) => call('/generate_image', payload, endpoint),
    generate_video: (payload, endpoint) => call('/generate_video', payload, endpoint),
  }
}
