/**
 * The ONNX Runtime engine's conversion of a request's JSON into tensors and of outputs back: numbers that fit are
 * packed in one pass, and anything else takes the careful path, so a mistake is still named the same way.
 */
import {expect} from 'chai'

import {fromTensor, type TensorSignature, toTensor} from '../../plugins/engine-onnxruntime/src/tensors.js'
import {errorFactory, ServiceError} from '../../src/kernel/errors.js'

const signature = (dtype: string, shape: Array<number | string>): TensorSignature => ({dtype, name: 'x', shape})
const convert = (value: unknown, dtype: string, shape: Array<number | string>, sizes = new Map<string, number>()) => toTensor(value, signature(dtype, shape), 'x', sizes, errorFactory)

function refusal(value: unknown, dtype: string, shape: Array<number | string>, sizes?: Map<string, number>): string {
  try {
    convert(value, dtype, shape, sizes)
  } catch (error) {
    expect(error).to.be.instanceOf(ServiceError)
    expect((error as ServiceError).param).to.equal('x')
    return (error as ServiceError).message
  }

  throw new Error('expected a 400')
}

describe('ONNX tensors from JSON', () => {
  it('packs nested numbers into the typed array of the dtype, with their shape', () => {
    const float = convert([[1, -1, 2.5], [0.5, 0, 3]], 'float32', ['N', 3])
    expect(float.dims).to.deep.equal([2, 3])
    expect(float.data).to.be.instanceOf(Float32Array)
    expect([...(float.data as Float32Array)]).to.deep.equal([1, -1, 2.5, 0.5, 0, 3])
    const ints = convert([[[1], [2]], [[3], [-4]]], 'int32', [])
    expect(ints.dims).to.deep.equal([2, 2, 1])
    expect([...(ints.data as Int32Array)]).to.deep.equal([1, 2, 3, -4])
    const scalar = convert(7, 'float64', [])
    expect(scalar.dims).to.deep.equal([])
    expect([...(scalar.data as Float64Array)]).to.deep.equal([7])
  })

  it('takes the careful path for 64-bit integers, booleans, strings and empty arrays', () => {
    expect([...(convert([1, 2], 'int64', [2]).data as BigInt64Array)]).to.deep.equal([1n, 2n])
    expect([...(convert([true, false], 'bool', [2]).data as Uint8Array)]).to.deep.equal([1, 0])
    expect(convert(['a', 'b'], 'string', [2]).data).to.deep.equal(['a', 'b'])
    expect(convert([], 'float32', []).dims).to.deep.equal([0])
  })

  it('names what does not fit, as the careful path words it', () => {
    expect(refusal([[1, 2], [3]], 'float32', [])).to.match(/x\[1\] has shape \[1\] where x\[0\] has \[2\]/)
    expect(refusal([[1, 2], 3], 'float32', [])).to.match(/x\[1\] has shape \[\] where x\[0\] has \[2\]/)
    expect(refusal([[1, 'two']], 'float32', [])).to.match(/takes numbers; element 1 of x is "two"/)
    expect(refusal([1.5], 'int32', [1])).to.match(/takes whole numbers from -2147483648 to 2147483647; element 0 of x is 1.5/)
    expect(refusal([300], 'uint8', [1])).to.match(/takes whole numbers from 0 to 255; element 0 of x is 300/)
    expect(refusal([[1, 2]], 'float32', ['N', 3])).to.match(/needs 3 in dimension 1; x has 2/)
    expect(refusal([[1, 2, 3]], 'float32', ['N', 3], new Map([['N', 2]]))).to.match(/has 1 in dimension 0 \(N\), where another input gave N = 2/)
  })

  it('records the sizes of symbolic dimensions only for inputs that fit', () => {
    const sizes = new Map<string, number>()
    convert([[1, 2, 3], [4, 5, 6]], 'float32', ['N', 3], sizes)
    expect(sizes.get('N')).to.equal(2)
  })
})

describe('ONNX tensors to JSON', () => {
  it('nests numeric outputs by their dims, and turns booleans and 64-bit integers into JSON values', () => {
    expect(fromTensor(Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3], 'float32')).to.deep.equal([[1, 2, 3], [4, 5, 6]])
    expect(fromTensor(Int32Array.from([1, 2, 3, 4]), [2, 1, 2], 'int32')).to.deep.equal([[[1, 2]], [[3, 4]]])
    expect(fromTensor(Float64Array.from([0.5]), [], 'float64')).to.equal(0.5)
    expect(fromTensor(Uint8Array.from([1, 0]), [2], 'bool')).to.deep.equal([true, false])
    expect(fromTensor(BigInt64Array.from([3n, -4n]), [2], 'int64')).to.deep.equal([3, -4])
  })
})
