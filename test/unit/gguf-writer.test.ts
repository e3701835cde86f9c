import {expect} from 'chai'
import {mkdtemp, readdir, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import path from 'node:path'
import {readGgufFileInfo} from 'node-llama-cpp'

import {float32ToFloat16Bits} from '../../plugins/engine-llama-cpp/src/gguf/encoding.js'
import {gguf, writeGguf} from '../../plugins/engine-llama-cpp/src/gguf/writer.js'

describe('the GGUF writer', () => {
  let dir: string

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gguf-writer-'))
  })

  after(async () => {
    if (dir !== undefined) await rm(dir, {force: true, recursive: true})
  })

  it('writes every metadata type and F32/F16 tensors the way node-llama-cpp reads them back', async () => {
    const manyStrings = Array.from({length: 5000}, (_, i) => `string number ${i} ✓`) // a header beyond 64 KiB
    const f32 = Float32Array.from({length: 3 * 5}, (_, i) => i / 7 - 1)
    const f16 = Float32Array.from([0, 1, -2, 0.1, 65504, 1e-7, -0, 3.14159])
    const filePath = path.join(dir, 'writer.gguf')
    const written = await writeGguf(filePath, {
      alignment: 64,
      metadata: {
        'test.u32': gguf.uint32(4_000_000_000),
        'test.i32': gguf.int32(-5),
        'test.u64': gguf.uint64(2n ** 40n),
        'test.f32': gguf.float32(0.5),
        'test.bool': gguf.bool(true),
        'test.string': gguf.string('héllo'),
        'test.strings': gguf.stringArray(manyStrings),
        'test.i32s': gguf.int32Array([1, -2, 3]),
        'test.f32s': gguf.float32Array([0.25, -1.5]),
      },
      tensors: [
        // Produced in uneven chunks to show that chunking does not matter.
        {name: 'f32', shape: [5, 3], type: 'f32', data: () => [f32.subarray(0, 4), f32.subarray(4)]},
        {name: 'f16', shape: [8], type: 'f16', data: async function* () { yield f16 }},
      ],
    })

    const info = await readGgufFileInfo(filePath, {logWarnings: false})
    const test = (info.metadata as any).test
    expect(test).to.deep.include({u32: 4_000_000_000, i32: -5, f32: 0.5, bool: true, string: 'héllo'})
    expect(Number(test.u64)).to.equal(2 ** 40)
    expect(test.strings).to.deep.equal(manyStrings)
    expect(test.i32s).to.deep.equal([1, -2, 3])
    expect(test.f32s).to.deep.equal([0.25, -1.5])
    expect((info.metadata as any).general.alignment).to.equal(64)

    const bytes = await readFile(filePath)
    expect(written.bytes).to.equal(bytes.length)
    expect(written.elements).to.equal(23)
    const [f32Info, f16Info] = info.tensorInfo!
    expect(f32Info!.dimensions.map(Number)).to.deep.equal([5, 3])
    expect(f16Info!.ggmlType).to.equal(1)
    expect(Number(f16Info!.offset)).to.equal(64) // 60 bytes of F32 padded to the 64-byte alignment
    for (let i = 0; i < f32.length; i++)
      expect(bytes.readFloatLE(Number(f32Info!.fileOffset) + i * 4)).to.equal(f32[i])
    for (let i = 0; i < f16.length; i++)
      expect(bytes.readUInt16LE(Number(f16Info!.fileOffset) + i * 2)).to.equal(float32ToFloat16Bits(f16[i]!))
    expect(bytes.length % 64).to.equal(0)
  })

  it('converts to float16 with round-to-nearest-even', () => {
    const cases: [number, number][] = [
      [0, 0x0000], [-0, 0x8000], [1, 0x3c00], [-2, 0xc000], [65504, 0x7bff], [65520, 0x7c00],
      [Infinity, 0x7c00], [-Infinity, 0xfc00], [2 ** -24, 0x0001], [2 ** -25, 0x0000], [2 ** -14, 0x0400],
      [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02], [0.1, 0x2e66],
    ]
    for (const [value, bits] of cases)
      expect(float32ToFloat16Bits(value), String(value)).to.equal(bits)
    expect(float32ToFloat16Bits(NaN) & 0x7c00).to.equal(0x7c00)
    expect(float32ToFloat16Bits(NaN) & 0x03ff).to.not.equal(0)

    // Node 24 rounds to float16 natively; compare on values that are exact float32s.
    const f16round = (Math as unknown as {f16round?: (x: number) => number}).f16round
    const Float16 = (globalThis as unknown as {Float16Array?: new (buffer: ArrayBuffer) => ArrayLike<number>}).Float16Array
    if (f16round === undefined || Float16 === undefined)
      return
    const halves = new Uint16Array(1)
    const decoded = new Float16(halves.buffer)
    for (let i = 0; i < 20_000; i++) {
      const value = Math.fround((Math.sin(i * 12.9898) * 43758.5453 % 1) * 2 ** ((i % 40) - 26))
      halves[0] = float32ToFloat16Bits(value)
      expect(decoded[0], String(value)).to.equal(f16round(value))
    }
  })

  it('fails without touching the target or leaving temporary files', async () => {
    const failDir = await mkdtemp(path.join(dir, 'fail-'))
    const target = path.join(failDir, 'model.gguf')
    await writeGguf(target, {metadata: {'a.b': gguf.string('first')}, tensors: []})
    const before = await readFile(target)

    const tooShort = writeGguf(target, {
      metadata: {'a.b': gguf.string('second')},
      tensors: [{name: 't', shape: [4, 4], type: 'f32', data: () => [new Float32Array(15)]}],
    })
    await expectRejection(tooShort, /produced 15 of its 16 elements/)
    const twice = {name: 't', shape: [2], type: 'f32', data: () => [new Float32Array(2)]} as const
    await expectRejection(writeGguf(target, {metadata: {}, tensors: [twice, twice]}), /Duplicate tensor name/)
    await expectRejection(writeGguf(target, {metadata: {x: gguf.uint32(-1)}, tensors: []}), /not an integer/)

    expect((await readFile(target)).equals(before)).to.equal(true)
    expect(await readdir(failDir)).to.deep.equal(['model.gguf'])
  })
})

async function expectRejection(promise: Promise<unknown>, message: RegExp): Promise<void> {
  try {
    await promise
  } catch (error) {
    expect((error as Error).message).to.match(message)
    return
  }
  expect.fail(`expected a rejection matching ${message}`)
}
