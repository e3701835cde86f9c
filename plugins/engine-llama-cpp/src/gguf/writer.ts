/**
 * A minimal GGUF v3 writer: enough to build models from scratch that llama.cpp loads.
 *
 * The format (ggml/docs/gguf.md, ggml/src/gguf.cpp), all little-endian:
 *
 *     "GGUF" | u32 version = 3 | u64 tensor count | u64 key/value count
 *     key/values:  string key | u32 value type | value   (arrays: u32 element type | u64 count | elements)
 *     tensor infos: string name | u32 n_dims | u64 ne[n_dims] | u32 ggml type | u64 offset into the data section
 *     zero padding up to `general.alignment`
 *     data section: each tensor's bytes, zero-padded up to `general.alignment`
 *
 * A string is a u64 byte length followed by UTF-8 bytes, without a terminator.
 *
 * llama.cpp insists that every tensor offset equals the padded end of the tensor before it, so offsets are derived from
 * the shapes here and callers never pass them. Tensor data is pulled chunk by chunk from each tensor's producer while the
 * file is written, so a model of hundreds of megabytes never sits in memory at once.
 */
import {randomUUID} from 'node:crypto'
import {open, rename, rm, type FileHandle} from 'node:fs/promises'
import {endianness} from 'node:os'

import {ByteBuilder, float32ToFloat16Bits} from './encoding.js'

/** Value type ids of GGUF metadata (`enum gguf_type` in ggml/include/gguf.h). */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const

/** Tensor element types this writer can encode; the ids are `enum ggml_type` in ggml/include/ggml.h. */
export const GGML_TYPE_IDS = {f32: 0, f16: 1} as const
export type GgmlTensorType = keyof typeof GGML_TYPE_IDS
const GGML_TYPE_SIZES: Record<GgmlTensorType, number> = {f32: 4, f16: 2}

/** Default of llama.cpp (GGUF_DEFAULT_ALIGNMENT); it is also written out explicitly as `general.alignment`. */
export const GGUF_DEFAULT_ALIGNMENT = 32

// GGML_MAX_NAME counts the terminating NUL; GGML_MAX_DIMS bounds the shape.
const GGML_MAX_NAME_LENGTH = 63
const GGML_MAX_DIMS = 4

/**
 * A metadata value with its GGUF type spelled out, because a JavaScript number alone cannot say whether llama.cpp
 * should see a u32, an i32 or an f32, and llama.cpp rejects a key whose type differs from the one it expects.
 * Build them with the {@link gguf} helpers.
 */
export type GgufMetadataValue =
  | {readonly type: 'uint16'; readonly value: number}
  | {readonly type: 'uint32'; readonly value: number}
  | {readonly type: 'int32'; readonly value: number}
  | {readonly type: 'uint64'; readonly value: bigint}
  | {readonly type: 'float32'; readonly value: number}
  | {readonly type: 'bool'; readonly value: boolean}
  | {readonly type: 'string'; readonly value: string}
  | {readonly type: 'string[]'; readonly value: readonly string[]}
  | {readonly type: 'int32[]'; readonly value: ArrayLike<number>}
  | {readonly type: 'float32[]'; readonly value: ArrayLike<number>}

/** Typed metadata constructors: `{"llama.block_count": gguf.uint32(2)}`. */
export const gguf = {
  uint16: (value: number): GgufMetadataValue => ({type: 'uint16', value}),
  uint32: (value: number): GgufMetadataValue => ({type: 'uint32', value}),
  int32: (value: number): GgufMetadataValue => ({type: 'int32', value}),
  uint64: (value: bigint | number): GgufMetadataValue => ({type: 'uint64', value: BigInt(value)}),
  float32: (value: number): GgufMetadataValue => ({type: 'float32', value}),
  bool: (value: boolean): GgufMetadataValue => ({type: 'bool', value}),
  string: (value: string): GgufMetadataValue => ({type: 'string', value}),
  stringArray: (value: readonly string[]): GgufMetadataValue => ({type: 'string[]', value}),
  int32Array: (value: ArrayLike<number>): GgufMetadataValue => ({type: 'int32[]', value}),
  float32Array: (value: ArrayLike<number>): GgufMetadataValue => ({type: 'float32[]', value}),
} as const

export interface GgufTensor {
  /** At most 63 bytes, e.g. `blk.0.attn_q.weight`. */
  readonly name: string
  /**
   * ggml order: `shape[0]` (ne0) is the innermost, contiguous dimension, the reverse of NumPy/PyTorch order.
   * A PyTorch `Linear(in, out)` weight of shape `[out, in]` is `[in, out]` here.
   */
  readonly shape: readonly number[]
  /** Storage type in the file; values are always produced as float32 and converted on the way out. */
  readonly type: GgmlTensorType
  /**
   * Yields the tensor's values in memory order (ne0 fastest) as consecutive chunks of any length that together hold
   * exactly the tensor's element count. It is called once, when the writer reaches this tensor, and each chunk is
   * written out before the next one is requested, so a producer may refill and yield the same array every time.
   */
  data(): Iterable<Float32Array> | AsyncIterable<Float32Array>
}

export interface GgufFile {
  /** Written in insertion order. `general.alignment` is added by the writer. */
  readonly metadata: Readonly<Record<string, GgufMetadataValue>>
  /** Written in this order; their offsets follow from the shapes. */
  readonly tensors: readonly GgufTensor[]
  /** Power of two; defaults to {@link GGUF_DEFAULT_ALIGNMENT}. */
  readonly alignment?: number
}

export interface GgufWriteResult {
  readonly filePath: string
  /** Size of the finished file. */
  readonly bytes: number
  /** Total number of tensor elements. */
  readonly elements: number
}

/**
 * Writes `file` to `filePath`. The bytes go to a uniquely named temporary file next to the target, which is renamed
 * over `filePath` only once complete: a reader never sees a half-written model, and concurrent writers (even to the same
 * path) cannot interleave. On failure the temporary file is removed and the target is left untouched.
 */
export async function writeGguf(filePath: string, file: GgufFile): Promise<GgufWriteResult> {
  const alignment = file.alignment ?? GGUF_DEFAULT_ALIGNMENT
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0)
    throw new RangeError(`GGUF alignment must be a power of two, got ${alignment}`)
  if (Object.hasOwn(file.metadata, 'general.alignment'))
    throw new Error('Pass the alignment as GgufFile.alignment, not as "general.alignment" metadata')

  const layout = layoutTensors(file.tensors, alignment)
  const header = encodeHeader({...file.metadata, 'general.alignment': gguf.uint32(alignment)}, layout, alignment)
  const dataBytes = layout.reduce((sum, tensor) => sum + alignUp(tensor.byteLength, alignment), 0)

  const tempPath = `${filePath}.${process.pid}.${randomUUID()}.tmp`
  const handle = await open(tempPath, 'wx')
  let closed = false
  try {
    const out = new FileOutput(handle)
    await out.write(header)
    for (const tensor of layout) {
      await writeTensorData(out, tensor)
      await out.writeZeros(alignUp(tensor.byteLength, alignment) - tensor.byteLength)
    }
    if (out.position !== header.length + dataBytes)
      throw new Error(`GGUF writer wrote ${out.position} bytes but laid out ${header.length + dataBytes}`)
    await handle.close()
    closed = true
    await rename(tempPath, filePath)
    return {filePath, bytes: out.position, elements: layout.reduce((sum, tensor) => sum + tensor.elements, 0)}
  } catch (error) {
    if (!closed)
      await handle.close().catch(() => undefined)
    await rm(tempPath, {force: true})
    throw error
  }
}

interface LaidOutTensor {
  readonly tensor: GgufTensor
  readonly elements: number
  readonly byteLength: number
  readonly offset: number
}

function layoutTensors(tensors: readonly GgufTensor[], alignment: number): LaidOutTensor[] {
  const names = new Set<string>()
  let offset = 0
  return tensors.map((tensor) => {
    const nameBytes = Buffer.byteLength(tensor.name, 'utf8')
    if (nameBytes === 0 || nameBytes > GGML_MAX_NAME_LENGTH)
      throw new RangeError(`Tensor name "${tensor.name}" must be 1 to ${GGML_MAX_NAME_LENGTH} bytes long`)
    if (names.has(tensor.name))
      throw new Error(`Duplicate tensor name "${tensor.name}"`)
    names.add(tensor.name)
    if (!(tensor.type in GGML_TYPE_IDS))
      throw new RangeError(`Tensor "${tensor.name}" has unsupported type "${tensor.type}"`)
    if (tensor.shape.length < 1 || tensor.shape.length > GGML_MAX_DIMS)
      throw new RangeError(`Tensor "${tensor.name}" must have 1 to ${GGML_MAX_DIMS} dimensions`)
    for (const dimension of tensor.shape) {
      if (!Number.isSafeInteger(dimension) || dimension < 1)
        throw new RangeError(`Tensor "${tensor.name}" has invalid dimension ${dimension}`)
    }

    const elements = tensor.shape.reduce((product, dimension) => product * dimension, 1)
    const byteLength = elements * GGML_TYPE_SIZES[tensor.type]
    const laidOut = {tensor, elements, byteLength, offset}
    offset += alignUp(byteLength, alignment)
    return laidOut
  })
}

function encodeHeader(
  metadata: Readonly<Record<string, GgufMetadataValue>>,
  tensors: readonly LaidOutTensor[],
  alignment: number
): Buffer {
  const out = new ByteBuilder()
  out.bytes(Buffer.from('GGUF', 'latin1'))
  out.u32(3)
  out.u64(BigInt(tensors.length))
  const entries = Object.entries(metadata)
  out.u64(BigInt(entries.length))
  for (const [key, value] of entries) {
    out.string(key)
    encodeValue(out, key, value)
  }

  for (const {tensor, offset} of tensors) {
    out.string(tensor.name)
    out.u32(tensor.shape.length)
    for (const dimension of tensor.shape)
      out.u64(BigInt(dimension))
    out.u32(GGML_TYPE_IDS[tensor.type])
    out.u64(BigInt(offset))
  }

  // The data section starts on an alignment boundary (measured from the file start).
  out.zeros(alignUp(out.length, alignment) - out.length)
  return out.toBuffer()
}

function encodeValue(out: ByteBuilder, key: string, value: GgufMetadataValue): void {
  const fail = (reason: string): never => {
    throw new RangeError(`Metadata "${key}" (${value.type}): ${reason}`)
  }
  const checkInteger = (n: number, min: number, max: number) => {
    if (!Number.isInteger(n) || n < min || n > max)
      fail(`${n} is not an integer in [${min}, ${max}]`)
  }
  const checkFinite = (n: number) => {
    if (!Number.isFinite(n))
      fail(`${n} is not finite`)
  }
  const arrayHeader = (elementType: number, length: number) => {
    out.u32(GgufValueType.ARRAY)
    out.u32(elementType)
    out.u64(BigInt(length))
  }

  switch (value.type) {
    case 'uint16':
      checkInteger(value.value, 0, 0xffff)
      out.u32(GgufValueType.UINT16)
      out.u16(value.value)
      return
    case 'uint32':
      checkInteger(value.value, 0, 0xffff_ffff)
      out.u32(GgufValueType.UINT32)
      out.u32(value.value)
      return
    case 'int32':
      checkInteger(value.value, -0x8000_0000, 0x7fff_ffff)
      out.u32(GgufValueType.INT32)
      out.i32(value.value)
      return
    case 'uint64':
      if (value.value < 0n || value.value > 0xffff_ffff_ffff_ffffn)
        fail(`${value.value} is out of range`)
      out.u32(GgufValueType.UINT64)
      out.u64(value.value)
      return
    case 'float32':
      checkFinite(value.value)
      out.u32(GgufValueType.FLOAT32)
      out.f32(value.value)
      return
    case 'bool':
      out.u32(GgufValueType.BOOL)
      out.u8(value.value ? 1 : 0)
      return
    case 'string':
      out.u32(GgufValueType.STRING)
      out.string(value.value)
      return
    case 'string[]':
      arrayHeader(GgufValueType.STRING, value.value.length)
      for (const item of value.value)
        out.string(item)
      return
    case 'int32[]': {
      arrayHeader(GgufValueType.INT32, value.value.length)
      for (let i = 0; i < value.value.length; i++) {
        checkInteger(value.value[i]!, -0x8000_0000, 0x7fff_ffff)
        out.i32(value.value[i]!)
      }
      return
    }
    case 'float32[]': {
      arrayHeader(GgufValueType.FLOAT32, value.value.length)
      for (let i = 0; i < value.value.length; i++) {
        checkFinite(value.value[i]!)
        out.f32(value.value[i]!)
      }
      return
    }
    default:
      fail('unknown value type')
  }
}

async function writeTensorData(out: FileOutput, {tensor, elements}: LaidOutTensor): Promise<void> {
  let written = 0
  for await (const chunk of tensor.data()) {
    if (!(chunk instanceof Float32Array))
      throw new TypeError(`Tensor "${tensor.name}" produced a chunk that is not a Float32Array`)
    written += chunk.length
    if (written > elements)
      throw new RangeError(`Tensor "${tensor.name}" produced more than its ${elements} elements`)
    await out.write(tensor.type === 'f16' ? out.encodeF16(chunk) : out.encodeF32(chunk))
  }
  if (written !== elements)
    throw new RangeError(`Tensor "${tensor.name}" produced ${written} of its ${elements} elements`)
}

/** Sequential writes through a file handle, with one reusable staging buffer for conversions. */
class FileOutput {
  position = 0
  private staging = Buffer.alloc(0)
  private static readonly littleEndianHost = endianness() === 'LE'

  constructor(private readonly handle: FileHandle) {}

  async write(bytes: Uint8Array): Promise<void> {
    let done = 0
    while (done < bytes.length) {
      const {bytesWritten} = await this.handle.write(bytes, done, bytes.length - done)
      done += bytesWritten
    }
    this.position += bytes.length
  }

  async writeZeros(count: number): Promise<void> {
    if (count > 0)
      await this.write(new Uint8Array(count))
  }

  encodeF32(values: Float32Array): Uint8Array {
    if (FileOutput.littleEndianHost)
      return new Uint8Array(values.buffer, values.byteOffset, values.byteLength)
    const view = this.stage(values.length * 4)
    for (let i = 0; i < values.length; i++)
      view.writeFloatLE(values[i]!, i * 4)
    return view
  }

  encodeF16(values: Float32Array): Uint8Array {
    const view = this.stage(values.length * 2)
    if (FileOutput.littleEndianHost) {
      // Buffer.alloc never hands out pooled memory, so the staging buffer starts 2-byte aligned.
      const halves = new Uint16Array(view.buffer, view.byteOffset, values.length)
      for (let i = 0; i < values.length; i++)
        halves[i] = float32ToFloat16Bits(values[i]!)
    } else {
      for (let i = 0; i < values.length; i++)
        view.writeUInt16LE(float32ToFloat16Bits(values[i]!), i * 2)
    }
    return view
  }

  private stage(byteLength: number): Buffer {
    if (this.staging.length < byteLength)
      this.staging = Buffer.alloc(byteLength)
    return this.staging.subarray(0, byteLength)
  }
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment
}
