/**
 * Dynamic batching of the ONNX Runtime engine on a real `service-local`: concurrent `/v1/flexible/infers` requests
 * to a model launched with `max_batch_size` run as one session run in its process (its debug log says so), and each
 * is answered exactly as ONNX Runtime answers it alone in this process; a bad request is refused alone and an
 * aborted one leaves its batch; a model without a dynamic first dimension is refused the parameter at launch.
 */
import {expect} from 'chai'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {InferenceSession, Tensor} from 'onnxruntime-node'

import {writeLinearModel, writeMlpModel} from '../helpers/onnx-models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const MLP = 'batch-mlp'
const LINEAR = 'batch-linear'
const WIDTH = 6

/** `rows` rows of WIDTH numbers, different for every `seed`. */
const rowsOf = (rows: number, seed: number) => Array.from({length: rows}, (_, row) => Array.from({length: WIDTH}, (_, column) => Math.sin(seed * 31 + row * 7 + column)))

describe('flexible ONNX models with dynamic batching (service-local)', function () {
  let service: RunningService
  let session: InferenceSession
  const infer = (uid: string, x: unknown, {requestId, signal}: {requestId?: string; signal?: AbortSignal} = {}) =>
    fetch(`${service.url}/v1/flexible/infers`, {
      body: JSON.stringify({model: uid, x}),
      headers: {'content-type': 'application/json', ...(requestId ? {'x-request-id': requestId} : {})},
      method: 'POST',
      signal,
    })
  /** What ONNX Runtime answers for `x` run alone, as JSON would carry it. */
  const alone = async (x: number[][]) => {
    const {y} = await session.run({x: new Tensor('float32', Float32Array.from(x.flat()), [x.length, WIDTH])})
    return Array.from({length: x.length}, (_, row) => Array.from((y.data as Float32Array).subarray(row * 4, row * 4 + 4)))
  }

  /** Waits for the service to log a request's access line (bounded by the test's timeout). */
  async function accessLine(pattern: RegExp) {
    for (let polls = 0; !pattern.test(service.output()); polls++) {
      if (polls === 400) throw new Error(`no access line ${pattern} in:\n${service.output()}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  const launch = (body: Record<string, unknown>) => callApi(service, 'POST', '/v1/models', {model_type: 'flexible', ...body})

  before(async function () {
    const directory = await temporaryDirectory()
    const mlpPath = join(directory, 'mlp.onnx')
    const linearPath = join(directory, 'linear.onnx')
    await writeMlpModel(mlpPath, {inputs: WIDTH, layers: 2, outputs: 4, width: 32})
    await writeLinearModel(linearPath, [[1, 2], [3, 4], [5, 6]])
    session = await InferenceSession.create(mlpPath)
    service = await startService({env: {SERVICE_LOG_LEVEL: 'debug'}})
    for (const [name, path] of [[MLP, mlpPath], [LINEAR, linearPath]]) {
      const registered = await callApi(service, 'POST', '/v1/model_registrations/flexible', {model: {launcher: 'onnx', model_name: name, model_uri: path}, persist: false})
      expect(registered.status, JSON.stringify(registered.body)).to.equal(200)
    }
  })

  after(async () => {
    await session?.release()
    await service?.stop()
  })

  it('refuses max_batch_size for a model with an input of fixed first dimension, and a queue delay without it, naming the parameter', async () => {
    const fixed = await launch({max_batch_size: 8, model_name: LINEAR})
    expect([fixed.status, fixed.body.error.param]).to.deep.equal([400, 'max_batch_size'])
    expect(fixed.body.error.message).to.match(/first dimension of every input and output, which must be dynamic .* bias \(float32, shape \[2\]\); launch it without max_batch_size/)
    const delayOnly = await launch({max_queue_delay_microseconds: 100, model_name: MLP})
    expect([delayOnly.status, delayOnly.body.error.param]).to.deep.equal([400, 'max_queue_delay_microseconds'])
    const plain = await launch({model_name: LINEAR})
    expect(plain.status, JSON.stringify(plain.body)).to.equal(200)
    expect((await callApi(service, 'DELETE', `/v1/models/${LINEAR}`)).status).to.equal(200)
  })

  it('runs concurrent requests as one batch, answering each exactly as ONNX Runtime answers it alone; a bad or aborted request leaves the others be', async () => {
    const rowCounts = [1, 2, 3, 4, 1, 2, 3, 4]
    const total = rowCounts.reduce((sum, rows) => sum + rows, 0)
    // The batch runs when it holds exactly the good requests' rows, long before the queue delay (a minute) is up.
    const launched = await launch({max_batch_size: total, max_queue_delay_microseconds: 60_000_000, model_name: MLP, model_uid: MLP})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    const leaving = new AbortController()
    const aborted = infer(MLP, rowsOf(2, 99), {requestId: 'batch-leaver', signal: leaving.signal}).catch((error: Error) => error.name)
    // Given time to reach the model's queue, so that it leaves the queue rather than never entering it (the answers
    // below are the same either way).
    await new Promise((resolve) => setTimeout(resolve, 100))
    leaving.abort()
    expect(await aborted).to.equal('AbortError')
    // Its access line is written once its handler has ended, which has sent the model process its abort: from then on
    // the requests below reach the model after it.
    await accessLine(/POST \/v1\/flexible\/infers.*status=\d+.*request_id=batch-leaver/)
    const inputs = rowCounts.map((rows, index) => rowsOf(rows, index))
    // A bad request among them is refused on its own and never joins their batch.
    const refused = infer(MLP, [[1, 2, 3]])
    const answers = await Promise.all(inputs.map(async (x) => (await infer(MLP, x)).json() as Promise<{y: number[][]}>))
    const bad = await refused
    expect(bad.status).to.equal(400)
    expect(((await bad.json()) as {error: {message: string}}).error.message).to.match(/needs 6 in dimension 1; x has 3/)
    for (const [index, x] of inputs.entries()) expect(answers[index].y, `request ${index}`).to.deep.equal(await alone(x))
    const log = await readFile(join(service.home, 'logs/models', `${MLP}.log`), 'utf8')
    expect(log).to.include(`one run for ${rowCounts.length} requests, ${total} rows`)
    expect((await callApi(service, 'DELETE', `/v1/models/${MLP}`)).status).to.equal(200)
  })

  it('with no queue delay, answers many concurrent requests exactly as ONNX Runtime answers each alone', async () => {
    const launched = await launch({max_batch_size: 64, model_name: MLP, model_uid: MLP})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
    const inputs = Array.from({length: 24}, (_, index) => rowsOf(1 + (index % 3), index + 100))
    const answers = await Promise.all(inputs.map(async (x) => (await infer(MLP, x)).json() as Promise<{y: number[][]}>))
    for (const [index, x] of inputs.entries()) expect(answers[index].y, `request ${index}`).to.deep.equal(await alone(x))
    expect((await callApi(service, 'DELETE', `/v1/models/${MLP}`)).status).to.equal(200)
  })
})
