/**
 * An external engine's program as the service's operators see it, through a real `service-local`: its output in the
 * model's log as timestamped lines of the service's own (text or JSON, as the service logs), and its end when the
 * service is killed with `kill -9`, which leaves the service no chance to stop it.
 */
import {expect} from 'chai'
import {rm} from 'node:fs/promises'

import {echoService, launchEcho} from '../helpers/external-echo.js'
import {alive} from '../helpers/processes.js'
import {type RunningService, until} from '../helpers/service.js'

describe("an external engine's program in the service's log and lifetime", function () {
  const homes: string[] = []
  let service: RunningService | undefined

  afterEach(async () => {
    await service?.stop()
    service = undefined
  })

  after(async () => Promise.all(homes.map((home) => rm(home, {force: true, recursive: true}))))

  it("writes the program's output as timestamped lines, and a kill -9 of the service ends the program too", async () => {
    service = await echoService([])
    homes.push(service.home)
    const {log, pid} = await launchEcho(service, 'echo-text')
    const serving = await until(async () => (await log()).find((line) => line.includes('serving')), 'the program to log that it serves')
    expect(serving).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info {2}\[program\] serving .*echo-weights\.txt on port \d+ stream=std(out|err)$/)
    expect(await log(), 'every line of the program is one of the service').to.satisfy((lines: string[]) => lines.every((line) => /^\d{4}-\d\d-\d\dT\S+Z \w+ +\[program\] /.test(line)))

    expect(alive(pid)).to.equal(true)
    service.process.kill('SIGKILL')
    await service.process
    await until(async () => (alive(pid) ? undefined : true), `program ${pid} to end with the service that was killed`)
  })

  it('writes them as JSON lines under --log-format json', async () => {
    service = await echoService(['--log-format', 'json'])
    homes.push(service.home)
    const {log} = await launchEcho(service, 'echo-json')
    await until(async () => (await log()).find((line) => line.includes('serving')), 'the program to log that it serves')
    const lines = (await log()).map((line) => JSON.parse(line) as Record<string, unknown>)
    const serving = lines.find((line) => String(line.msg).startsWith('serving'))
    expect(serving).to.include({level: 'info', name: 'program'})
    expect(serving!.stream).to.be.oneOf(['stdout', 'stderr'])
    expect(new Date(String(serving!.time)).toISOString()).to.equal(serving!.time)
    expect(serving, 'a program line belongs to no request').not.to.have.property('request_id')
  })
})
