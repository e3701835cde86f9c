/**
 * The service's logger: one line per entry whatever a logged value holds, and files only the user can read.
 */
import {expect} from 'chai'
import {readFileSync} from 'node:fs'
import {chmod, mkdir, readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {withRequestId} from '../../src/kernel/request-context.js'
import {createLogger, escapeControlCharacters} from '../../src/util/logger.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('logger', () => {
  it('escapes control characters, so a logged value can neither start a line nor drive the terminal', () => {
    expect(escapeControlCharacters('a\nb\r\tc\u001B[31md\u0000\u007F\u0085\u2028')).to.equal('a\\nb\\r\\tc\\x1b[31md\\x00\\x7f\\x85\\u2028')
    expect(escapeControlCharacters('plain text, ünïcode and "quotes"')).to.equal('plain text, ünïcode and "quotes"')
  })

  it('writes each entry as one line to its file, created 0600 in a folder created 0700', async () => {
    const logs = join(await temporaryDirectory(), 'logs')
    const file = join(logs, 'service.log')
    const log = createLogger({file, name: 'test'})
    log.warn('login refused for "x\n2026-01-01T00:00:00.000Z info  [test] forged"')
    await log.close()
    const lines = (await readFile(file, 'utf8')).split('\n')
    expect(lines).to.have.length(2)
    expect(lines[0]).to.match(/^\S+ warn  \[test\] login refused for "x\\n2026-01-01T00:00:00.000Z info  \[test\] forged"$/)
    expect((await stat(logs)).mode & 0o777).to.equal(0o700)
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
  })

  it('has each line in its file once logged, with no wait, and drops lines logged after close', async () => {
    const file = join(await temporaryDirectory(), 'logs', 'service.log')
    const log = createLogger({file, name: 'test'})
    log.info('first')
    expect(readFileSync(file, 'utf8')).to.match(/ info  \[test\] first\n$/)
    await log.close()
    log.info('after close')
    expect(readFileSync(file, 'utf8').split('\n')).to.have.length(2)
  })

  it('makes a log file and folder left readable by an earlier version private again', async () => {
    const logs = join(await temporaryDirectory(), 'logs')
    await mkdir(logs, {mode: 0o755})
    const file = join(logs, 'service.log')
    await writeFile(file, 'old line\n', {mode: 0o644})
    await chmod(file, 0o644)
    const log = createLogger({file, name: 'test'})
    await log.close()
    expect((await stat(logs)).mode & 0o777).to.equal(0o700)
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
  })

  it('writes JSON lines with level, time, name and message, fields as properties, and values escaped as in text', async () => {
    const file = join(await temporaryDirectory(), 'logs', 'service.log')
    const log = createLogger({file, format: 'json', level: 'info', name: 'test'})
    log.debug('not at info')
    log.info('GET /v1/models', {model: undefined, route: '/v1/models', status: 200})
    log.warn('login refused for "x\n{\"level\":\"info\"}\u001B[2J"')
    await log.close()
    const lines = (await readFile(file, 'utf8')).split('\n')
    expect(lines).to.have.length(3)
    const [access, refused] = lines.slice(0, 2).map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(access).to.deep.include({level: 'info', msg: 'GET /v1/models', name: 'test', route: '/v1/models', status: 200})
    expect(access).not.to.have.property('model')
    expect(new Date(access.time as string).toISOString()).to.equal(access.time)
    expect(refused).to.include({level: 'warn', msg: 'login refused for "x\\n{"level":"info"}\\x1b[2J"'})
    expect((await stat(file)).mode & 0o777).to.equal(0o600)
  })

  it('puts the id of the request a line is about on it, in both formats', async () => {
    const folder = await temporaryDirectory()
    const text = createLogger({file: join(folder, 'text.log'), name: 'test'})
    const json = createLogger({file: join(folder, 'json.log'), format: 'json', name: 'test'})
    for (const log of [text, json]) {
      withRequestId('abc-123', () => log.info('during a request', {model: 'tiny'}))
      log.info('outside any request')
      await log.close()
    }

    const [during, outside] = (await readFile(join(folder, 'text.log'), 'utf8')).split('\n')
    expect(during).to.match(/^\S+ info  \[test\] during a request model=tiny request_id=abc-123$/)
    expect(outside).to.match(/^\S+ info  \[test\] outside any request$/)
    const [jsonDuring, jsonOutside] = (await readFile(join(folder, 'json.log'), 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(jsonDuring).to.include({model: 'tiny', msg: 'during a request', request_id: 'abc-123'})
    expect(jsonOutside).not.to.have.property('request_id')
  })
})
