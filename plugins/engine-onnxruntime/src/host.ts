/**
 * Runs inside a flexible model's own process: one ONNX Runtime session for the model's file. Its inputs and
 * outputs are read from the model itself, each request's arguments are checked against them (tensors.ts) before
 * the session runs, and the outputs go back by name as nested arrays, written as JSON text here, so that neither the
 * IPC hop nor the service turns every number into a value of its own again. With `max_batch_size`, requests waiting
 * together run as one batch (dynamic-batcher.ts), each checked on its own first, so a bad one never fails the others.
 */
import type {EngineHost, FlexibleOperations, FlexiblePayload, LoadedModel} from 'service-toolkit'

import {InferenceSession, Tensor} from 'onnxruntime-node'

import {concatRows, fixedFirstDimension, type RowData, rowShapeOf, splitRows} from './batch-rows.js'
import {DynamicBatcher} from './dynamic-batcher.js'
import {sessionOptions} from './session-options.js'
import {describeSignature, fromTensor, supportedDtype, type TensorSignature, type TensorValue, toTensor} from './tensors.js'

function signatureOf(metadata: InferenceSession.ValueMetadata): TensorSignature {
  if (!metadata.isTensor) return {dtype: 'non-tensor', name: metadata.name, shape: []}
  return {dtype: metadata.type, name: metadata.name, shape: [...metadata.shape]}
}

const host: EngineHost<FlexibleOperations> = {
  async load(request, {errors, log}) {
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

    const maxBatchSize = request.parameters.max_batch_size as number | undefined
    const maxQueueDelayMicroseconds = request.parameters.max_queue_delay_microseconds as number | undefined
    if (maxBatchSize === undefined && maxQueueDelayMicroseconds !== undefined) {
      await session.release()
      throw errors.badRequest('max_queue_delay_microseconds is how long a request waits for others to batch with; it needs max_batch_size too.', 'max_queue_delay_microseconds')
    }

    const fixed = maxBatchSize === undefined ? undefined : fixedFirstDimension([...inputs, ...outputs])
    if (fixed) {
      await session.release()
      throw errors.badRequest(
        `max_batch_size stacks requests along the first dimension of every input and output, which must be dynamic (such as N), but ${request.modelName} has ${describeSignature(fixed)}; launch it without max_batch_size.`,
        'max_batch_size',
      )
    }

    /** The request's arguments as tensors in the model's input order: positional ones in that order, then keywords. */
    function tensorsOf({args, kwargs}: FlexiblePayload): TensorValue[] {
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
      return inputs.map((input) => {
        const entry = given.get(input.name)
        if (!entry) throw errors.badRequest(`input ${describeSignature(input)} is missing; give it by name or in args.`, input.name)
        return toTensor(entry[0], input, entry[1], sizes, errors)
      })
    }

    const feedsOf = (tensors: TensorValue[]): InferenceSession.FeedsType =>
      Object.fromEntries(inputs.map((input, index) => [input.name, new Tensor(input.dtype as 'float32', tensors[index].data as Float32Array, tensors[index].dims)]))
    const answerOf = (parts: RowData[], types: string[]) => JSON.stringify(Object.fromEntries(outputs.map((output, index) => [output.name, fromTensor(parts[index].data, parts[index].dims, types[index])])))

    /**
     * One session run for one request or a batch of them (their inputs stacked); each request's answer as JSON text.
     * A batch whose outputs cannot be cut back into its requests' rows fails, and the batcher runs them one by one.
     */
    async function run(requests: TensorValue[][]): Promise<string[]> {
      const stacked = requests.length === 1 ? requests[0] : inputs.map((_, index) => concatRows(requests.map((tensors) => tensors[index])))
      const named = await session.run(feedsOf(stacked))
      const tensors = outputs.map(({name}) => named[name] as Tensor)
      try {
        const types = tensors.map((tensor) => tensor.type)
        const whole = tensors.map((tensor) => ({data: tensor.data as ArrayLike<unknown>, dims: tensor.dims}))
        if (requests.length === 1) return [answerOf(whole, types)]
        const rows = stacked[0].dims[0]
        const split = whole.map((output) => splitRows(output, requests.map((tensors) => tensors[0].dims[0])))
        if (split.some((parts) => parts === undefined)) {
          log.warn(`an output of a batched run does not have the batch's ${rows} rows first, so its requests run one by one; launch the model without max_batch_size.`)
          throw new Error('the outputs of a batched run cannot be split into its requests\' rows')
        }

        log.debug(`one run for ${requests.length} requests, ${rows} rows`)
        return requests.map((_, request) => answerOf(split.map((parts) => parts![request]), types))
      } finally {
        for (const tensor of tensors) tensor.dispose()
      }
    }

    const batcher =
      maxBatchSize === undefined
        ? undefined
        : new DynamicBatcher<TensorValue[], string>({maxBatchSize, maxQueueDelayMs: (maxQueueDelayMicroseconds ?? 0) / 1000, run})
    const model: LoadedModel<FlexibleOperations> = {
      async dispose() {
        await session.release()
      },
      info: {abilities: ['infer'], inputs, outputs},
      operations: {
        async *infer(payload, signal) {
          const tensors = tensorsOf(payload)
          signal.throwIfAborted()
          const [json] = batcher ? [await batcher.submit(tensors, rowShapeOf(tensors), signal)] : await run([tensors])
          signal.throwIfAborted()
          yield {json, type: 'result'}
        },
      },
    }
    return model
  },
}

export default host
