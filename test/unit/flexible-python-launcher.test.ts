/**
 * The flexible `python` launcher (plugins/engine-flexible-python/python/launcher.py) started directly, as the plugin
 * starts it, on the machine's python3 with a model module the test writes (standard library only): a result JSON
 * cannot write is the model's 500 naming its type, not the caller's 400; NaN and ±Infinity come back as null so the
 * answer is JSON; and calls reaching the server together reach the model one at a time. NumPy results are checked in
 * a cached test environment that has NumPy, when there is one.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {readdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {programSpawner, type RunningProgram} from '../../src/model-process/program-spawner.js'
import {pythonPathWithHelpers} from '../../src/model-process/python-helpers.js'
import {TEST_CACHE} from '../helpers/python-tools.js'
import {closedPort, ROOT, temporaryDirectory, until} from '../helpers/service.js'

const LAUNCHER = join(ROOT, 'plugins/engine-flexible-python/python/launcher.py')

const MODULE = `import threading
import time


class Model:
    def __init__(self):
        self.guard = threading.Lock()
        self.inside = 0
        self.most_inside = 0

    def infer(self, what, *rest):
        if what == "object":
            return {"fine": 1, "not json": object()}
        if what == "non-finite":
            return {"values": [float("nan"), float("inf"), -float("inf"), 1.5], "nan": float("nan")}
        if what == "numpy":
            import numpy
            return {"array": numpy.array([[1.0, numpy.nan], [numpy.inf, -numpy.inf]]), "scalar": numpy.float32("nan"), "int": numpy.int64(3)}
        if what == "overlap":
            with self.guard:
                self.inside += 1
                self.most_inside = max(self.most_inside, self.inside)
            # Long enough for the other calls' threads to arrive while this one is inside.
            time.sleep(0.2)
            with self.guard:
                self.inside -= 1
            return rest[0]
        if what == "most inside":
            return self.most_inside
        raise ValueError(f"no such call: {what}")


def load(model_uri, model_description):
    return Model()
`

interface Started {
  base: string
  program: RunningProgram
}

async function startLauncher(python: string, folder: string): Promise<Started> {
  const port = await closedPort()
  const base = `http://127.0.0.1:${port}`
  const launcherArgs = JSON.stringify({function: 'load', module: 'launcher_test_model', path: folder})
  const spawn = await programSpawner()
  const program = spawn({
    args: ['-u', LAUNCHER, '--port', String(port), '--model-uri', join(folder, 'unused'), '--launcher-args', launcherArgs, '--allowed-modules', '["launcher_test_model"]'],
    env: {},
    file: python,
    logFile: join(folder, `launcher-${port}.log`),
  })
  await until(async () => (await fetch(`${base}/health`).catch(() => undefined))?.ok || undefined, 'the launcher to answer /health')
  return {base, program}
}

async function infer(base: string, args: unknown[]): Promise<{status: number; body: {result?: unknown; error?: {message: string; param: string | null}}}> {
  const response = await fetch(`${base}/infer`, {body: JSON.stringify({args}), headers: {'content-type': 'application/json'}, method: 'POST'})
  // Parsed as the plugin parses it: an answer that is not JSON fails here.
  return {body: JSON.parse(await response.text()), status: response.status}
}

/** The Python of a cached test environment that has NumPy, if any. */
async function pythonWithNumpy(): Promise<string | undefined> {
  const environments = join(TEST_CACHE, 'virtualenv')
  if (!existsSync(environments)) return undefined
  for (const name of await readdir(environments)) {
    const lib = join(environments, name, 'lib')
    if (!existsSync(lib)) continue
    for (const version of await readdir(lib)) {
      if (existsSync(join(lib, version, 'site-packages', 'numpy'))) return join(environments, name, 'bin', 'python')
    }
  }
  return undefined
}

describe('the flexible python launcher', function () {
  this.timeout(30_000)
  let folder: string
  let launcher: Started

  before(async () => {
    folder = await temporaryDirectory('service-flexible-launcher-')
    await writeFile(join(folder, 'launcher_test_model.py'), MODULE)
    launcher = await startLauncher('python3', folder)
  })

  after(() => launcher?.program.kill('SIGKILL'))

  it("answers a result JSON cannot write with a 500 naming its type, not a 400 on the caller's arguments", async () => {
    const {body, status} = await infer(launcher.base, ['object'])
    expect(status).to.equal(500)
    expect(body.error?.message).to.match(/\bobject\b/)
    expect(body.error?.param).to.equal(null)
    expect((await infer(launcher.base, ['something else'])).status, "the caller's ValueError is still a 400").to.equal(400)
  })

  it('writes NaN and ±Infinity as null, so the answer is JSON', async () => {
    expect(await infer(launcher.base, ['non-finite'])).to.deep.equal({body: {result: {nan: null, values: [null, null, null, 1.5]}}, status: 200})
  })

  it('calls the model one call at a time, however many requests arrive together', async () => {
    const answers = await Promise.all([1, 2, 3, 4].map((index) => infer(launcher.base, ['overlap', index])))
    expect(answers.map(({body}) => body.result)).to.deep.equal([1, 2, 3, 4])
    expect((await infer(launcher.base, ['most inside'])).body.result).to.equal(1)
  })

  it('refuses, before importing anything, a module the service did not allow, even within a package it allows', async () => {
    const witness = join(folder, 'imported')
    await writeFile(join(folder, 'planted.py'), `open(${JSON.stringify(witness)}, "w").close()\n`)
    for (const [module, allowed] of [['pydoc', '["launcher_test_model"]'], ['planted', '["launcher_test_model"]'], ['launcher_test_modelx', '["launcher_test_model"]'], ['planted', '[]']]) {
      const launcherArgs = JSON.stringify({function: 'pipepager', module, path: folder})
      const run = await execa('python3', [LAUNCHER, '--port', '1', '--model-uri', '/unused', '--launcher-args', launcherArgs, '--allowed-modules', allowed], {env: {PYTHONPATH: pythonPathWithHelpers(undefined)}, reject: false})
      expect(run.exitCode, module).to.equal(1)
      expect(run.stderr, module).to.contain(`launcher_args.module '${module}' is not among the modules SERVICE_ALLOWED_PYTHON_MODULES allows`)
    }

    expect(existsSync(witness), 'the planted module ran').to.equal(false)
  })

  it('writes NumPy arrays and scalars, their non-finite values as null', async function () {
    const python = await pythonWithNumpy()
    if (!python) this.skip()
    const withNumpy = await startLauncher(python, folder)
    try {
      expect(await infer(withNumpy.base, ['numpy'])).to.deep.equal({body: {result: {array: [[1, null], [null, null]], int: 3, scalar: null}}, status: 200})
    } finally {
      withNumpy.program.kill('SIGKILL')
    }
  })
})
