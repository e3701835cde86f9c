/**
 * docs/tool-calls.md's example run as written: `servicectl launch` of the tiny random model on llama.cpp, then the
 * openai client forcing a call of the named tool, answered and streamed. Only the port differs from what a reader runs.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {chmod, mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {readmeBlock} from '../helpers/readme.js'
import {ROOT, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

const PAGE = 'docs/tool-calls.md'

describe('docs/tool-calls.md', () => {
  let service: RunningService

  before(async () => {
    service = await startService()
  })

  after(async () => service?.stop())

  it('launches tiny-random-llm and calls a tool through the openai client, answered and streamed, as the page shows', async function () {
    this.timeout(300_000)
    const directory = await temporaryDirectory()
    const bin = join(directory, 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'servicectl'), `#!/bin/sh\nexec node ${join(ROOT, 'bin/servicectl.js')} "$@"\n`)
    await chmod(join(bin, 'servicectl'), 0o755)
    const launch = await execa('bash', ['-euo', 'pipefail', '-c', await readmeBlock('tool-calls-launch', PAGE)], {
      cwd: directory,
      env: {PATH: `${bin}:${process.env.PATH}`, SERVICE_ENDPOINT: service.url},
      reject: false,
    })
    expect(launch.exitCode, launch.stderr).to.equal(0)
    expect(launch.stdout).to.contain('Model uid: tiny-random-llm')

    const example = (await readmeBlock('tool-calls-client', PAGE)).replaceAll('http://127.0.0.1:9997', service.url)
    const run = await execa('node', ['--input-type=module', '-e', example], {cwd: ROOT, reject: false})
    expect(run.exitCode, run.stderr).to.equal(0)
    expect(run.stdout).to.equal("tool_calls get_weather [ 'city' ]\nget_weather [ 'city' ]")
  })
})
