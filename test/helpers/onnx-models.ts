/**
 * Small ONNX graphs the tests write with onnx-proto (the ONNX protobuf schema compiled for JavaScript), so the
 * ONNX Runtime engine loads a real model file and really computes, with no download.
 */
import {writeFile} from 'node:fs/promises'
import protobuf from 'onnx-proto'

const {onnx} = protobuf

type Dimension = number | string

function valueInfo(name: string, elemType: number, shape: Dimension[]) {
  return {
    name,
    type: {tensorType: {elemType, shape: {dim: shape.map((dim) => (typeof dim === 'number' ? {dimValue: dim} : {dimParam: dim}))}}},
  }
}

/**
 * `y = x · weights + bias` for a batch of rows: `x` is float32 [N, rows of weights], `bias` float32
 * [columns of weights], `y` float32 [N, columns]; and `count`, an int64 scalar-per-row [N] of how many entries of
 * each row of `x` are positive, so integer outputs are covered too.
 */
export async function writeLinearModel(path: string, weights: number[][]): Promise<void> {
  const rows = weights.length
  const columns = weights[0].length
  const FLOAT = onnx.TensorProto.DataType.FLOAT
  const INT64 = onnx.TensorProto.DataType.INT64
  const model = onnx.ModelProto.create({
    graph: {
      initializer: [
        {dataType: FLOAT, dims: [rows, columns], floatData: weights.flat(), name: 'weights'},
        {dataType: FLOAT, dims: [], floatData: [0], name: 'zero'},
        {dataType: INT64, dims: [1], int64Data: [1], name: 'axis'},
      ],
      input: [valueInfo('x', FLOAT, ['N', rows]), valueInfo('bias', FLOAT, [columns])],
      name: 'linear',
      node: [
        {input: ['x', 'weights'], opType: 'MatMul', output: ['product']},
        {input: ['product', 'bias'], opType: 'Add', output: ['y']},
        {input: ['x', 'zero'], opType: 'Greater', output: ['positive']},
        {input: ['positive'], opType: 'Cast', output: ['positive_int'], attribute: [{i: INT64, name: 'to', type: onnx.AttributeProto.AttributeType.INT}]},
        {input: ['positive_int', 'axis'], opType: 'ReduceSum', output: ['count'], attribute: [{i: 0, name: 'keepdims', type: onnx.AttributeProto.AttributeType.INT}]},
      ],
      output: [valueInfo('y', FLOAT, ['N', columns]), valueInfo('count', INT64, ['N'])],
    },
    irVersion: 8,
    opsetImport: [{domain: '', version: 17}],
    producerName: 'service-toolkit tests',
  })
  await writeFile(path, onnx.ModelProto.encode(model).finish())
}

/** Numbers from a fixed seed (a linear congruential generator), so a generated model is the same every time. */
function seededValues(count: number, seed: number, scale: number): number[] {
  let state = seed >>> 0
  return Array.from({length: count}, () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
    return (state / 2 ** 32 - 0.5) * scale
  })
}

/**
 * A multilayer perceptron with random weights, for the benchmark: `x` float32 [N, inputs] through `layers` hidden
 * layers of `width` (MatMul then Relu) to `y` float32 [N, outputs]. Its work per row grows with width², its
 * JSON stays small.
 */
export async function writeMlpModel(path: string, {inputs, layers, outputs, width}: {inputs: number; width: number; layers: number; outputs: number}): Promise<void> {
  const FLOAT = onnx.TensorProto.DataType.FLOAT
  const sizes = [inputs, ...Array.from({length: layers}, () => width), outputs]
  const initializer = sizes.slice(1).map((size, index) => ({dataType: FLOAT, dims: [sizes[index], size], floatData: seededValues(sizes[index] * size, index + 1, 2 / Math.sqrt(sizes[index])), name: `w${index}`}))
  const node = initializer.flatMap(({name}, index) => {
    const input = index === 0 ? 'x' : `h${index}`
    const last = index === initializer.length - 1
    return last
      ? [{input: [input, name], opType: 'MatMul', output: ['y']}]
      : [
          {input: [input, name], opType: 'MatMul', output: [`m${index + 1}`]},
          {input: [`m${index + 1}`], opType: 'Relu', output: [`h${index + 1}`]},
        ]
  })
  const model = onnx.ModelProto.create({
    graph: {initializer, input: [valueInfo('x', FLOAT, ['N', inputs])], name: 'mlp', node, output: [valueInfo('y', FLOAT, ['N', outputs])]},
    irVersion: 8,
    opsetImport: [{domain: '', version: 17}],
    producerName: 'service-toolkit bench',
  })
  await writeFile(path, onnx.ModelProto.encode(model).finish())
}

/** The same computation in JavaScript, to check the service's answers against. */
export function linear(x: number[][], weights: number[][], bias: number[]): {y: number[][]; count: number[]} {
  return {
    count: x.map((row) => row.filter((value) => value > 0).length),
    y: x.map((row) => bias.map((b, column) => row.reduce((sum, value, index) => sum + value * weights[index][column], b))),
  }
}
