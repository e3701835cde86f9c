/**
 * A child's output in the model's log: lines the service's logger wrote in the child are kept as they are; anything
 * else (a native library's own message, an external program's line) becomes a timestamped line of the service's.
 */

import {expect} from 'chai'
import {PassThrough} from 'node:stream'

import type {LogFile} from '../../src/util/logger.js'

import {outputLog} from '../../src/model-process/output-log.js'

function capture() {
  const written: string[] = []
  const log: LogFile = {end: () => {}, write: (text) => void written.push(text)}
  return {log, written}
}

describe('a child process output in the model log', () => {
  it('keeps the service-formatted lines and timestamps the others, split and joined across chunks, in text', async () => {
    const {log, written} = capture()
    const output = outputLog(log, {format: 'text', name: 'model', tailLines: 2})
    const stderr = new PassThrough()
    output.follow('stderr', stderr)
    const own = '2026-01-01T12:00:00.000Z info  [model] loaded request_id=abc'
    stderr.write(`${own}\n[node-llama-cpp] The prebuilt binary`)
    stderr.end(' is not compatible\n')
    await new Promise((resolve) => stderr.once('end', resolve))
    expect(written[0]).to.equal(`${own}\n`)
    expect(written[1]).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info {2}\[model\] \[node-llama-cpp\] The prebuilt binary is not compatible stream=stderr\n$/)
    expect(output.lines()).to.deep.equal([own, '[node-llama-cpp] The prebuilt binary is not compatible'])
  })

  it('writes the others as JSON lines under the JSON format, and keeps the JSON lines already written', async () => {
    const {log, written} = capture()
    const output = outputLog(log, {format: 'json', name: 'program', tailLines: 5})
    const stdout = new PassThrough()
    output.follow('stdout', stdout)
    const own = '{"level":"info","time":"2026-01-01T12:00:00.000Z","name":"model","msg":"loaded"}'
    stdout.end(`${own}\nINFO 11-24 server ready\n`)
    await new Promise((resolve) => stdout.once('end', resolve))
    expect(written[0]).to.equal(`${own}\n`)
    expect(JSON.parse(written[1])).to.include({level: 'info', msg: 'INFO 11-24 server ready', name: 'program', stream: 'stdout'})
  })
})
