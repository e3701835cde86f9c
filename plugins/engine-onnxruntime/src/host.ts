/**
 * Runs inside a flexible model's own process: one ONNX Runtime session for the model's file. Its inputs and
 * outputs are read from the model itself, each request's arguments are checked against them (tensors.ts) before
 * the session runs, and the outputs go back by name as nested arrays, written as JSON text here, so that neither the
 * IPC hop nor the service turns every number into a value of its own again.
 */
import type {EngineHost, FlexibleOperations, FlexiblePayload, LoadedModel} from 'service-toolkit'

import {InferenceSession, Tensor} from 'onnxruntime-node'

import {sessionOptions} from './session-options.js'
import {describeSignature, fromTensor, supportedDtype, type TensorSignature, toTensor} from './tensors.js'

function signatureOf(metadata: InferenceSession.ValueMetadata): TensorSignature {
  if (!metadata.isTensor) return {dtype: 'non-tensor', name: metadata.name, shape: []}
  return {dtype: metadata.type, name: metadata.name, shape: [...metadata.shape]}
}

const host: EngineHost<FlexibleOperations> = {
  async load(request, {errors}) {
    const threads = request.parameters.intra_op_num_threads as number | undefined
    const session = await InferenceSession.create(request.modelPath, sessionOptions(threads)).catch((error: Error) => {
      throw errors.badRequest(`${request.modelName} is not an ONNX model ONNX Runtime can load: ${error.message.split('\n')[0]}`, 'model_uri')
    })
    const inputs = session.inputMetadata.map(signatureOf)
    const outputs = session.outputMetadata.map(signatureOf)
    const unsupported = inputs.find((input) => !supportedDtype(input.dtype))
    if (unsupported) {
      await session.release()
      throw errors.badRequest(`${request.modelName} takes the input ${describeSignature(unsupported)}, which JSON cannot carry; this engine serves models whose inputs are numbers, booleans or strings.`, 'model_uri')
    }

    /** The request's arguments as feeds by input name: positional ones in the model's input order, then keywords. */
    function feedsOf({args, kwargs}: FlexiblePayload): InferenceSession.FeedsType {
      const names = inputs.map((input) => input.name)
      if (args.length > inputs.length)
        throw errors.badRequest(`args has ${args.length} values, but the model takes ${inputs.length} inputs: ${inputs.map(describeSignature).join(', ')}.`, 'args')
      const given = new Map<string, [unknown, string]>(args.map((value, index) => [names[index], [value, `args[${index}]`]]))
      for (const [name, value] of Object.entries(kwargs)) {
        if (!names.includes(name)) throw errors.badRequest(`the model has no input named ${name}; its inputs are ${inputs.map(describeSignature).join(', ')}.`, name)
        if (given.has(name)) throw errors.badRequest(`input ${name} is given twice: as ${given.get(name)![1]} and by name.`, name)
        given.set(name, [value, name])
      }

      const sizes = new Map<string, number>()
      const feeds: Record<string, Tensor> = {}
      for (const input of inputs) {
        const entry = given.get(input.name)
        if (!entry) throw errors.badRequest(`input ${describeSignature(input)} is missing; give it by name or in args.`, input.name)
        const {data, dims} = toTensor(entry[0], input, entry[1], sizes, errors)
        feeds[input.name] = new Tensor(input.dtype as 'float32', data as Float32Array, dims)
      }

      return feeds
    }

    const model: LoadedModel<FlexibleOperations> = {
      async dispose() {
        await session.release()
      },
      info: {abilities: ['infer'], inputs, outputs},
      operations: {
        async *infer(payload, signal) {
          const feeds = feedsOf(payload)
          signal.throwIfAborted()
          const results = await session.run(feeds)
          const result: Record<string, unknown> = {}
          for (const output of outputs) {
            const tensor = results[output.name] as Tensor
            result[output.name] = fromTensor(tensor.data as ArrayLike<unknown>, tensor.dims, tensor.type)
            tensor.dispose()
          }

          yield {json: JSON.stringify(result), type: 'result'}
        },
      },
    }
    return model
  },
}

export default host
