/**
 * Little-endian encodings the GGUF writer needs: IEEE 754 half floats for F16 tensors, and a growable byte buffer for
 * the header.
 */

const f32Scratch = new Float32Array(1)
const u32Scratch = new Uint32Array(f32Scratch.buffer)

/** IEEE 754 binary16 bits of `value`, rounded to nearest even like the CPU conversions ggml uses. */
export function float32ToFloat16Bits(value: number): number {
  f32Scratch[0] = value
  const bits = u32Scratch[0]!
  const sign = (bits >>> 16) & 0x8000
  const exponent = (bits >>> 23) & 0xff
  let mantissa = bits & 0x7f_ffff

  if (exponent === 0xff)
    return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0)

  const halfExponent = exponent - 127 + 15
  if (halfExponent >= 0x1f)
    return sign | 0x7c00

  if (halfExponent <= 0) {
    // Subnormal (or zero) half: shift the mantissa, implicit bit included, into the 10 available bits.
    if (halfExponent < -10)
      return sign
    mantissa |= 0x80_0000
    const shift = 14 - halfExponent
    let half = mantissa >>> shift
    const remainder = mantissa & ((1 << shift) - 1)
    const halfway = 1 << (shift - 1)
    if (remainder > halfway || (remainder === halfway && (half & 1) !== 0))
      half++
    return sign | half
  }

  // A carry out of the mantissa correctly bumps the exponent, up to infinity.
  let half = (halfExponent << 10) | (mantissa >>> 13)
  const remainder = mantissa & 0x1fff
  if (remainder > 0x1000 || (remainder === 0x1000 && (half & 1) !== 0))
    half++
  return sign | half
}

/** Growable little-endian byte buffer for the header, which is small next to the tensor data. */
export class ByteBuilder {
  private buffer = Buffer.alloc(64 * 1024)
  length = 0

  /** Returns the offset to write at; call it before reading `this.buffer`, which it may replace. */
  private reserve(byteCount: number): number {
    const at = this.length
    if (at + byteCount > this.buffer.length) {
      const grown = Buffer.alloc(Math.max(this.buffer.length * 2, at + byteCount))
      this.buffer.copy(grown, 0, 0, at)
      this.buffer = grown
    }
    this.length += byteCount
    return at
  }

  u8(value: number): void {
    const at = this.reserve(1)
    this.buffer.writeUInt8(value, at)
  }

  u16(value: number): void {
    const at = this.reserve(2)
    this.buffer.writeUInt16LE(value, at)
  }

  u32(value: number): void {
    const at = this.reserve(4)
    this.buffer.writeUInt32LE(value, at)
  }

  i32(value: number): void {
    const at = this.reserve(4)
    this.buffer.writeInt32LE(value, at)
  }

  u64(value: bigint): void {
    const at = this.reserve(8)
    this.buffer.writeBigUInt64LE(value, at)
  }

  f32(value: number): void {
    const at = this.reserve(4)
    this.buffer.writeFloatLE(value, at)
  }

  bytes(bytes: Uint8Array): void {
    const at = this.reserve(bytes.length)
    this.buffer.set(bytes, at)
  }

  zeros(count: number): void {
    this.reserve(count) // Buffer.alloc zero-fills, and bytes are never reused.
  }

  string(value: string): void {
    const encoded = Buffer.from(value, 'utf8')
    this.u64(BigInt(encoded.length))
    this.bytes(encoded)
  }

  toBuffer(): Buffer {
    return this.buffer.subarray(0, this.length)
  }
}
