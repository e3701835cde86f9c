/**
 * The flexible type's `python` launcher on a real `service-local`: a module the test writes trains a scikit-learn
 * classifier on a few rows (the model_uri, a CSV file) in the model's virtual environment, made from the
 * registration's `virtualenv` (cached outside the repository), and `/v1/flexible/infers` calls its `infer`.
 */
import {expect} from 'chai'
import {readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {Client} from '../../src/client/index.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const MODULE = `import csv
from sklearn.linear_model import LogisticRegression


class Classifier:
    def __init__(self, estimator):
        self.estimator = estimator

    def infer(self, rows):
        return self.estimator.predict(rows)


def load(model_uri, model_description, C=1.0):
    with open(model_uri) as file:
        rows = [[float(value) for value in row] for row in csv.reader(file)]
    return Classifier(LogisticRegression(C=C).fit([row[:-1] for row in rows], [int(row[-1]) for row in rows]))
`
/** A loader that prints what it should not (a secret file, the service's environment), then fails to import a module. */
const LEAKY_MODULE = `import os
import sys


def launcher(model_uri, model_description):
    with open(os.path.join(os.path.dirname(model_uri), 'secret.txt')) as file:
        print(file.read())
    print(dict(os.environ), file=sys.stderr)
    import service_test_no_such_module
`
/** In the secret file and in the service's environment: a launch's caller must never see it. */
const MARKER = 'MARKER-7f3a9c'
const ROWS = ['0,0,0', '0,1,0', '1,0,0', '5,5,1', '5,6,1', '6,5,1'].join('\n')

describe('flexible models with the python launcher (scikit-learn, service-local)', function () {
  let service: RunningService
  let directory: string

  before(async function () {
    // A cold run installs scikit-learn into the cached environment.
    this.timeout(600_000)
    directory = await temporaryDirectory()
    await writeFile(join(directory, 'tiny_classifier.py'), MODULE)
    await writeFile(join(directory, 'rows.csv'), ROWS + '\n')
    await writeFile(join(directory, 'leaky_loader.py'), LEAKY_MODULE)
    await writeFile(join(directory, 'secret.txt'), `file ${MARKER}\n`)
    const uv = await uvFromPyPI()
    service = await startService({env: {PATH: `${uv}:${process.env.PATH}`, SERVICE_TEST_SECRET: `environment ${MARKER}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
    const family = {
      launcher: 'python',
      launcher_args: {C: 10, function: 'load', module: 'tiny_classifier', path: directory},
      model_name: 'tiny-classifier',
      model_uri: join(directory, 'rows.csv'),
      virtualenv: {packages: ['scikit-learn']},
    }
    expect((await callApi(service, 'POST', '/v1/model_registrations/flexible', {model: family, persist: false})).status).to.equal(200)
    const launched = await callApi(service, 'POST', '/v1/models', {model_name: 'tiny-classifier', model_type: 'flexible'})
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await rm(directory, {force: true, recursive: true})
  })

  it('trains on the rows at launch and classifies new ones through /v1/flexible/infers and the client', async () => {
    const {body, status} = await callApi(service, 'POST', '/v1/flexible/infers', {args: [[[0, 0.5], [5.5, 5.5]]], model: 'tiny-classifier'})
    expect([status, body]).to.deep.equal([200, [0, 1]])
    expect(await new Client(service.url).model('tiny-classifier').infer([], {rows: [[6, 6]]})).to.deep.equal([1])
    const model = (await callApi(service, 'GET', '/v1/models/tiny-classifier')).body
    expect(model).to.deep.include({model_engine: 'python', model_format: 'python', model_type: 'flexible'})
  })

  it('answers arguments the model cannot take with a 400 on args, and keeps serving', async () => {
    const wrong = await callApi(service, 'POST', '/v1/flexible/infers', {args: [[[1, 2, 3]]], model: 'tiny-classifier'})
    expect(wrong.status).to.equal(400)
    expect(wrong.body.error.param).to.equal('args')
    expect(wrong.body.error.message).to.match(/ValueError: .*3 features/)
    const unknown = await callApi(service, 'POST', '/v1/flexible/infers', {model: 'tiny-classifier', wrong_name: 1})
    expect([unknown.status, unknown.body.error.message]).to.satisfy(([s, m]: [number, string]) => s === 400 && /unexpected keyword argument 'wrong_name'/.test(m))
    expect((await callApi(service, 'POST', '/v1/flexible/infers', {args: [[[0, 0]]], model: 'tiny-classifier'})).body).to.deep.equal([0])
  })

  it("fails a launch whose loader prints a secret file and the environment with the exception's type, the output only in the model's log", async () => {
    const family = {launcher: 'python', launcher_args: {module: 'leaky_loader', path: directory}, model_name: 'leaky', model_uri: join(directory, 'rows.csv'), virtualenv: {packages: ['scikit-learn']}}
    expect((await callApi(service, 'POST', '/v1/model_registrations/flexible', {model: family, persist: false})).status).to.equal(200)
    const launched = await callApi(service, 'POST', '/v1/models', {model_name: 'leaky', model_type: 'flexible'})
    expect(launched.status).to.equal(500)
    expect(launched.body.error.message).to.equal(
      "failed to launch leaky: model leaky's program exited with code 1 before it was ready (it raised ModuleNotFoundError); its output is in the model's log, logs/models/leaky.log in the service's home (on its worker's machine in a cluster).",
    )
    const seen = JSON.stringify([launched.body, (await callApi(service, 'GET', '/v1/models/leaky/events')).body, (await callApi(service, 'GET', '/v1/launch_history')).body])
    expect(seen).to.not.contain(MARKER)
    const log = await readFile(join(service.home, 'logs', 'models', 'leaky.log'), 'utf8')
    expect(log).to.contain(`file ${MARKER}`).and.contain(`environment ${MARKER}`).and.contain('service_test_no_such_module')
  })
})
