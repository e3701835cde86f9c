/**
 * Between JSON and ONNX tensors. A request gives each input as nested arrays (or a scalar); its dtype and shape
 * are checked against what the model itself declares, so a mistake is a 400 naming the input, what it must be and
 * what it got, never an error from inside ONNX Runtime. Outputs go back as nested arrays.
 */
import type {ErrorFactory, ServiceError} from 'service-toolkit'

export type Dimension = number | string

/** One input or output as the model declares it; `shape` is empty when the model leaves it open. */
export interface TensorSignature {
  name: string
  dtype: string
  shape: Dimension[]
}

type Typed = Float32Array | Float64Array | Int8Array | Int16Array | Int32Array | BigInt64Array | Uint8Array | Uint16Array | Uint32Array | BigUint64Array
type Element = 'bool' | 'float' | 'integer' | 'string'

interface DtypeRule {
  element: Element
  make?: (length: number) => Typed
  range?: [bigint, bigint]
}

const int = (bits: number, signed: boolean): [bigint, bigint] =>
  signed ? [-(2n ** BigInt(bits - 1)), 2n ** BigInt(bits - 1) - 1n] : [0n, 2n ** BigInt(bits) - 1n]

/** The dtypes JSON can carry; float16 and the like have no JSON form a client could be expected to write. */
const DTYPES: Record<string, DtypeRule> = {
  bool: {element: 'bool', make: (n) => new Uint8Array(n)},
  float32: {element: 'float', make: (n) => new Float32Array(n)},
  float64: {element: 'float', make: (n) => new Float64Array(n)},
  int8: {element: 'integer', make: (n) => new Int8Array(n), range: int(8, true)},
  int16: {element: 'integer', make: (n) => new Int16Array(n), range: int(16, true)},
  int32: {element: 'integer', make: (n) => new Int32Array(n), range: int(32, true)},
  int64: {element: 'integer', make: (n) => new BigInt64Array(n), range: int(64, true)},
  string: {element: 'string'},
  uint8: {element: 'integer', make: (n) => new Uint8Array(n), range: int(8, false)},
  uint16: {element: 'integer', make: (n) => new Uint16Array(n), range: int(16, false)},
  uint32: {element: 'integer', make: (n) => new Uint32Array(n), range: int(32, false)},
  uint64: {element: 'integer', make: (n) => new BigUint64Array(n), range: int(64, false)},
}

export const supportedDtype = (dtype: string) => dtype in DTYPES

export const describeSignature = ({dtype, name, shape}: TensorSignature) => `${name} (${dtype}, shape [${shape.join(', ') || 'any'}])`

/** A tensor's data and dims, ready for `new Tensor(dtype, data, dims)`. */
export interface TensorValue {
  data: Typed | string[]
  dims: number[]
}

/** The shape of nested arrays, or a message saying where they are not rectangular. */
function shapeOf(value: unknown, path: string): number[] | string {
  if (!Array.isArray(value)) return []
  if (value.length === 0) return [0]
  const inner = shapeOf(value[0], `${path}[0]`)
  if (typeof inner === 'string') return inner
  for (let index = 1; index < value.length; index++) {
    const other = shapeOf(value[index], `${path}[${index}]`)
    if (typeof other === 'string') return other
    if (other.join() !== inner.join()) return `${path}[${index}] has shape [${other.join(', ')}] where ${path}[0] has [${inner.join(', ')}]; every row must be the same length`
  }

  return [value.length, ...inner]
}

function elementOf(value: unknown, rule: DtypeRule): bigint | boolean | number | string | undefined {
  switch (rule.element) {
    case 'bool':
      return typeof value === 'boolean' ? value : undefined
    case 'float':
      return typeof value === 'number' ? value : undefined
    case 'string':
      return typeof value === 'string' ? value : undefined
    case 'integer': {
      if (typeof value !== 'number' || !Number.isInteger(value)) return undefined
      const big = BigInt(value)
      return big >= rule.range![0] && big <= rule.range![1] ? big : undefined
    }
  }
}

const elementWords: Record<Element, string> = {bool: 'true or false', float: 'numbers', integer: 'whole numbers', string: 'strings'}

/**
 * Numbers of a numeric input that fit its dtype, written straight into its typed array in one pass, with the shape
 * read off the first element of each level; undefined when anything does not fit (not rectangular, an element of
 * the wrong kind, empty), for the careful path to say what. 64-bit integers and booleans always take that path.
 */
function packNumbers(value: unknown, rule: DtypeRule): TensorValue | undefined {
  if (!rule.make || rule.element === 'bool' || rule.element === 'string') return undefined
  const dims: number[] = []
  for (let level = value; Array.isArray(level); level = level[0]) {
    if (level.length === 0) return undefined
    dims.push(level.length)
  }

  const data = rule.make(dims.reduce((product, dim) => product * dim, 1))
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return undefined
  const [low, high] = rule.range ? rule.range.map(Number) : [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY]
  const integer = rule.element === 'integer'
  const fits = (item: unknown): item is number => typeof item === 'number' && (!integer || (Number.isInteger(item) && item >= low && item <= high))
  let offset = 0
  const fill = (level: unknown, axis: number): boolean => {
    if (!Array.isArray(level) || level.length !== dims[axis]) return false
    if (axis === dims.length - 1) {
      for (const item of level) {
        if (!fits(item)) return false
        data[offset++] = item
      }

      return true
    }

    for (const item of level) if (!fill(item, axis + 1)) return false
    return true
  }

  if (dims.length === 0) {
    if (!fits(value)) return undefined
    data[0] = value
    return {data, dims}
  }

  return fill(value, 0) ? {data, dims} : undefined
}

/** Checks dims against the model's declared shape, recording the sizes of symbolic dimensions in `sizes`. */
function checkShape(dims: number[], signature: TensorSignature, field: string, sizes: Map<string, number>, fail: (problem: string) => ServiceError): void {
  if (signature.shape.length === 0) return
  if (dims.length !== signature.shape.length) throw fail(`needs ${signature.shape.length} dimensions; ${field} has ${dims.length} (shape [${dims.join(', ')}])`)
  for (const [axis, expected] of signature.shape.entries()) {
    const size = dims[axis]
    if (typeof expected === 'number' && expected >= 0 && size !== expected) throw fail(`needs ${expected} in dimension ${axis}; ${field} has ${size} (shape [${dims.join(', ')}])`)
    if (typeof expected === 'string' && expected !== '') {
      const known = sizes.get(expected)
      if (known !== undefined && known !== size) throw fail(`has ${size} in dimension ${axis} (${expected}), where another input gave ${expected} = ${known}`)
      sizes.set(expected, size)
    }
  }
}

/**
 * Converts one input's JSON into a tensor, checking it against the model's signature. `sizes` holds the sizes given
 * so far to symbolic dimensions (a batch dimension `N` shared by two inputs must be the same in both). Numbers that
 * fit are packed in one pass (packNumbers); anything else is read element by element, which says where it goes wrong.
 */
export function toTensor(value: unknown, signature: TensorSignature, field: string, sizes: Map<string, number>, errors: ErrorFactory): TensorValue {
  const fail = (problem: string): ServiceError => errors.badRequest(`input ${describeSignature(signature)} ${problem}.`, field)
  const rule = DTYPES[signature.dtype]
  const packed = packNumbers(value, rule)
  const dims = packed?.dims ?? shapeOf(value, field)
  if (typeof dims === 'string') throw fail(`cannot be read: ${dims}`)
  checkShape(dims, signature, field, sizes, fail)
  if (packed) return packed
  const flat = dims.length === 0 ? [value] : (value as unknown[]).flat(dims.length - 1)
  const elements = flat.map((item, index) => {
    const element = elementOf(item, rule)
    if (element === undefined)
      throw fail(
        `takes ${elementWords[rule.element]}${rule.range ? ` from ${rule.range[0]} to ${rule.range[1]}` : ''}; element ${index} of ${field} is ${JSON.stringify(item) ?? 'missing'}`,
      )
    return element
  })
  if (!rule.make) return {data: elements as string[], dims}
  const data = rule.make(elements.length)
  for (const [index, element] of elements.entries())
    (data as unknown as Array<bigint | number>)[index] = data instanceof BigInt64Array || data instanceof BigUint64Array ? (element as bigint) : Number(element)
  return {data, dims}
}

/**
 * A tensor's data as nested arrays of JSON values; 64-bit integers become numbers (exact up to 2^53). The rows of a
 * numeric tensor are copied from views of its data, without a flat copy of the whole first.
 */
export function fromTensor(data: ArrayLike<unknown>, dims: readonly number[], dtype: string): unknown {
  const numeric = ArrayBuffer.isView(data) && !(data instanceof BigInt64Array || data instanceof BigUint64Array) && dtype !== 'bool'
  const values = numeric ? (data as Float32Array) : Array.from(data, (item) => (typeof item === 'bigint' ? Number(item) : dtype === 'bool' ? Boolean(item) : item))
  if (dims.length === 0) return values[0]
  const nest = (offset: number, axis: number): unknown[] => {
    const size = dims[axis]
    if (axis === dims.length - 1) return numeric ? Array.from((values as Float32Array).subarray(offset, offset + size)) : (values as unknown[]).slice(offset, offset + size)
    const stride = dims.slice(axis + 1).reduce((product, dim) => product * dim, 1)
    return Array.from({length: size}, (_, index) => nest(offset + index * stride, axis + 1))
  }

  return nest(0, 0)
}
