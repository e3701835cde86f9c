/**
 * The flexible model type with the ONNX Runtime engine on a real `service-local`: an ONNX graph the test writes,
 * registered in Xinference's format (model_uri and launcher), launched in a process of its own and called through
 * `/v1/flexible/infers`, the client library and `servicectl infer`; inputs that do not fit are refused naming them.
 */
import {expect} from 'chai'
import {join} from 'node:path'

import {Client} from '../../src/client/index.js'
import {linear, writeLinearModel} from '../helpers/onnx-models.js'
import {type OpenApiDocument, OpenApiChecker} from '../helpers/openapi-checker.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

const MODEL = 'tiny-linear'
const WEIGHTS = [
  [1, 2],
  [3, 4],
  [5, 6],
]
const X = [
  [1, -1, 2],
  [0.5, 0.5, 0.5],
]
const BIAS = [0.25, -0.5]

function expectClose(actual: number[][], expected: number[][]) {
  expect(actual.length).to.equal(expected.length)
  for (const [row, values] of expected.entries()) for (const [column, value] of values.entries()) expect(actual[row][column]).to.be.closeTo(value, 1e-5)
}

describe('flexible models on ONNX Runtime (service-local)', function () {
  let service: RunningService
  let modelPath: string
  const infer = (body: Record<string, unknown>) => callApi(service, 'POST', '/v1/flexible/infers', {model: MODEL, ...body})

  before(async function () {
    modelPath = join(await temporaryDirectory(), 'linear.onnx')
    await writeLinearModel(modelPath, WEIGHTS)
    service = await startService()
    const family = {launcher: 'onnx', model_description: 'y = x·W + b', model_name: MODEL, model_uri: modelPath}
    expect((await callApi(service, 'POST', '/v1/model_registrations/flexible', {model: family, persist: false})).status).to.equal(200)
    const launched = await callApi(service, 'POST', '/v1/models', {model_name: MODEL, model_type: 'flexible'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  after(async () => service?.stop())

  it('lists the registration with its launcher and runs the model on the onnxruntime engine', async () => {
    const registration = await callApi(service, 'GET', `/v1/model_registrations/flexible/${MODEL}`)
    expect(registration.body).to.deep.include({launcher: 'onnx', model_uri: modelPath})
    const {body} = await callApi(service, 'GET', '/v1/models')
    expect(body.data.find((model: {id: string}) => model.id === MODEL)).to.deep.include({model_ability: ['infer'], model_engine: 'onnxruntime', model_format: 'onnx', model_type: 'flexible'})
  })

  it('computes the outputs from inputs given by name, and the same from inputs given in order', async () => {
    const expected = linear(X, WEIGHTS, BIAS)
    const byName = await infer({bias: BIAS, x: X})
    expect(byName.status, JSON.stringify(byName.body)).to.equal(200)
    expectClose(byName.body.y, expected.y)
    expect(byName.body.count).to.deep.equal(expected.count)
    const inOrder = await infer({args: [X, BIAS]})
    expect(inOrder.body).to.deep.equal(byName.body)
    const mixed = await infer({args: [X], bias: BIAS})
    expect(mixed.body).to.deep.equal(byName.body)
  })

  it('refuses inputs that do not fit the model, naming the input, its dtype and shape, and keeps serving', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{x: X}, 'bias', /input bias \(float32, shape \[2\]\) is missing/],
      [{bias: BIAS, x: [[1, 2]]}, 'x', /input x \(float32, shape \[N, 3\]\) needs 3 in dimension 1; x has 2/],
      [{bias: BIAS, x: [1, 2, 3]}, 'x', /needs 2 dimensions; x has 1/],
      [{bias: BIAS, x: [[1, 2, 3], [4, 5]]}, 'x', /x\[1\] has shape \[2\] where x\[0\] has \[3\]/],
      [{bias: BIAS, x: [[1, 'two', 3]]}, 'x', /takes numbers; element 1 of x is "two"/],
      [{bias: BIAS, w: 1, x: X}, 'w', /no input named w; its inputs are x \(float32, shape \[N, 3\]\), bias \(float32, shape \[2\]\)/],
      [{args: [X, BIAS, 1]}, 'args', /args has 3 values, but the model takes 2 inputs/],
      [{args: [X], x: X}, 'x', /input x is given twice: as args\[0\] and by name/],
      [{args: [X, [1]]}, 'args[1]', /input bias \(float32, shape \[2\]\) needs 2 in dimension 0; args\[1\] has 1/],
    ]
    for (const [body, param, message] of cases) {
      const reply = await infer(body)
      expect(reply.status, JSON.stringify(body)).to.equal(400)
      expect(reply.body.error.param, JSON.stringify(body)).to.equal(param)
      expect(reply.body.error.message).to.match(message)
    }

    expect((await infer({bias: BIAS, x: X})).status).to.equal(200)
  })

  it('refuses a registration without a launcher or with a relative model_uri, naming the field', async () => {
    const register = (model: Record<string, unknown>) => callApi(service, 'POST', '/v1/model_registrations/flexible', {model, persist: false})
    const noLauncher = await register({model_name: 'no-launcher', model_uri: modelPath})
    expect([noLauncher.status, noLauncher.body.error.param]).to.deep.equal([400, 'launcher'])
    const relative = await register({launcher: 'onnx', model_name: 'relative', model_uri: 'linear.onnx'})
    expect([relative.status, relative.body.error.param]).to.deep.equal([400, 'model_uri'])
  })

  it('runs through the client library and servicectl infer', async () => {
    const expected = linear(X, WEIGHTS, BIAS)
    const result = (await new Client(service.url).model(MODEL).infer([X], {bias: BIAS})) as {y: number[][]}
    expectClose(result.y, expected.y)
    const cli = await servicectl(['infer', '-e', service.url, '-u', MODEL, '--kwargs', JSON.stringify({bias: BIAS, x: X}), '--json'])
    expect(cli.exitCode, cli.stderr).to.equal(0)
    expectClose(JSON.parse(cli.stdout).y, expected.y)
    const bad = await servicectl(['infer', '-e', service.url, '-u', MODEL, '--kwargs', '{"x": '])
    expect(bad.exitCode).to.equal(2)
    expect(bad.stderr).to.match(/--kwargs is not valid JSON/)
  })

  it('answers every flexible route as /openapi.json declares it', async () => {
    const checker = new OpenApiChecker((await callApi(service, 'GET', '/openapi.json')).body as OpenApiDocument)
    await checker.call(service, 'POST', '/v1/flexible/infers', {body: {bias: BIAS, model: MODEL, x: X}})
    const routes = checker.operations().filter((key) => checker.operation(key)['x-plugin'] === '@service-toolkit/plugin-model-flexible')
    expect(routes.filter((key) => !checker.answered.get(key)?.has(200)), 'routes not answered 200').to.deep.equal([])
  })
})
