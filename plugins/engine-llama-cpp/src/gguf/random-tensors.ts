/**
 * Seeded random tensor data for generated models: the same seed and tensor name always give the same values, so a
 * generated model file is byte-identical wherever and whenever it is written.
 */

/** Elements per chunk handed to the writer: 1 MiB of F32, whole rows only. */
const CHUNK_ELEMENTS = 256 * 1024

/** Adjusts one row (ne0 contiguous values) of a tensor in place after it has been drawn. */
export type RowShaper = (rowIndex: number, row: Float32Array) => void

/**
 * Uniform values in [-√3·std, √3·std] (variance std²), row by row, from an sfc32 generator. Uniform rather than
 * Gaussian because it is several times cheaper and the distribution's shape does not matter here. Every row consumes
 * its random numbers even if `shapeRow` overwrites it, so shaping one row never shifts the values of the others.
 */
export function* uniformRows(rowLength: number, rows: number, std: number, seed: number, shapeRow?: RowShaper): Generator<Float32Array> {
  const rowsPerChunk = Math.max(1, Math.floor(CHUNK_ELEMENTS / rowLength))
  const buffer = new Float32Array(Math.min(rowsPerChunk, rows) * rowLength)
  const half = std * Math.sqrt(3)
  const scale = (2 * half) / 2 ** 32

  let [a, b, c, d] = seedSfc32(seed)
  for (let firstRow = 0; firstRow < rows; firstRow += rowsPerChunk) {
    const rowCount = Math.min(rowsPerChunk, rows - firstRow)
    const chunk = buffer.subarray(0, rowCount * rowLength)
    for (let i = 0; i < chunk.length; i++) {
      // sfc32 (Chris Doty-Humphrey's Small Fast Counting generator), inlined because this loop is the hot path.
      const t = (((a + b) | 0) + d) | 0
      d = (d + 1) | 0
      a = b ^ (b >>> 9)
      b = (c + (c << 3)) | 0
      c = (c << 21) | (c >>> 11)
      c = (c + t) | 0
      chunk[i] = (t >>> 0) * scale - half
    }
    if (shapeRow !== undefined) {
      for (let row = 0; row < rowCount; row++)
        shapeRow(firstRow + row, chunk.subarray(row * rowLength, (row + 1) * rowLength))
    }
    yield chunk
  }
}

export function* constantChunks(length: number, value: number): Generator<Float32Array> {
  const buffer = new Float32Array(Math.min(length, CHUNK_ELEMENTS)).fill(value)
  for (let done = 0; done < length; done += buffer.length)
    yield buffer.subarray(0, Math.min(buffer.length, length - done))
}

/** Per-tensor seed: FNV-1a of the name, mixed with the model seed. */
export function tensorSeed(seed: number, name: string): number {
  let hash = 0x811c9dc5 ^ Math.imul(seed | 0, 0x9e3779b1) ^ Math.floor(seed / 2 ** 32)
  for (const byte of Buffer.from(name, 'utf8'))
    hash = Math.imul(hash ^ byte, 0x01000193)
  return hash >>> 0
}

/** Expands a 32-bit seed into sfc32's 128-bit state with splitmix32, then discards the first outputs as sfc32 advises. */
function seedSfc32(seed: number): [number, number, number, number] {
  let state = seed | 0
  const splitmix32 = () => {
    state = (state + 0x9e3779b9) | 0
    let z = state
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b)
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35)
    return (z ^ (z >>> 16)) | 0
  }
  let a = splitmix32(), b = splitmix32(), c = splitmix32(), d = splitmix32()
  for (let i = 0; i < 12; i++) {
    const t = (((a + b) | 0) + d) | 0
    d = (d + 1) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    c = (c + t) | 0
  }
  return [a, b, c, d]
}
