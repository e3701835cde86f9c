/**
 * The row arithmetic of dynamic batching (as NVIDIA Triton calls it): requests whose inputs differ only in their first
 * dimension are concatenated along it into one run, and each output is cut back into every request's rows. Pure
 * functions of tensors' data and dims, so the batcher and the tests use them without ONNX Runtime.
 */
import type {TensorSignature, TensorValue} from './tensors.js'

/**
 * The first input or output whose first dimension is not dynamic (a symbol such as `N`, or left unnamed), which
 * rules batching out: rows of several requests could not be stacked along it, or not be told apart again.
 */
export function fixedFirstDimension(signatures: TensorSignature[]): TensorSignature | undefined {
  return signatures.find(({shape}) => shape.length === 0 || typeof shape[0] !== 'string')
}

/** How a request may join a batch: its rows, and the key of its other dims, which its batch-mates must share. */
export interface RowShape {
  rows: number
  key: string
}

/**
 * A request's rows (the first dimension its inputs share) and the key of the rest of their dims; undefined when its
 * inputs disagree on their first dimension or one is a scalar, so it runs alone.
 */
export function rowShapeOf(inputs: TensorValue[]): RowShape | undefined {
  if (inputs.length === 0 || inputs.some(({dims}) => dims.length === 0 || dims[0] !== inputs[0].dims[0])) return undefined
  return {key: inputs.map(({dims}) => dims.slice(1).join('x')).join(';'), rows: inputs[0].dims[0]}
}

/** One input of several requests stacked along the first dimension; every part has the same dims past it. */
export function concatRows(parts: TensorValue[]): TensorValue {
  const dims = [parts.reduce((rows, part) => rows + part.dims[0], 0), ...parts[0].dims.slice(1)]
  const first = parts[0].data
  if (Array.isArray(first)) return {data: parts.flatMap((part) => part.data as string[]), dims}
  // The typed array of the input's own dtype (all parts share it), as Float32Array for its set().
  const data = new (first.constructor as Float32ArrayConstructor)(parts.reduce((length, part) => length + part.data.length, 0))
  let offset = 0
  for (const part of parts) {
    data.set(part.data as Float32Array, offset)
    offset += part.data.length
  }

  return {data, dims}
}

/** An output's data, typed or not, as ONNX Runtime gives it. */
export interface RowData {
  data: ArrayLike<unknown>
  dims: readonly number[]
}

/**
 * An output of a batched run cut into each request's rows (views of its data, not copies); undefined when its first
 * dimension is not the batch's rows, so the model does not keep rows apart and the batch cannot be answered.
 */
export function splitRows({data, dims}: RowData, rows: number[]): RowData[] | undefined {
  if (dims.length === 0 || dims[0] !== rows.reduce((sum, count) => sum + count, 0)) return undefined
  const stride = dims.slice(1).reduce((product, dim) => product * dim, 1)
  const slice = (start: number, end: number) =>
    ArrayBuffer.isView(data) ? (data as unknown as Float32Array).subarray(start, end) : Array.prototype.slice.call(data, start, end)
  let offset = 0
  return rows.map((count) => {
    const part = {data: slice(offset * stride, (offset + count) * stride), dims: [count, ...dims.slice(1)]}
    offset += count
    return part
  })
}
