/**
 * The program's one operation as the image type declares it: POSTs the payload and reads the program's JSON lines back
 * as events as they come (a step done, then the images), through the kernel's `api.external.jsonLines`. The request's
 * signal closes the connection when the client goes away, and the program then kills the generation at its next step.
 */
import type {ExternalOperations, ImageOperations, JsonLinesCall} from 'service-toolkit'

export const stableDiffusionOperations = (call: JsonLinesCall): Partial<ExternalOperations<ImageOperations>> => ({
  generate_image: (payload, endpoint) => call('/generate_image', payload, endpoint),
})
