/**
 * `servicectl` and the service programs as real processes in scripts: output piped into a reader that stops early,
 * `--json` errors, and what is printed for an empty or filtered answer.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {join} from 'node:path'

import {ROOT, type RunningService, SERVICECTL, servicectl, startService} from '../helpers/service.js'

describe('servicectl in scripts (real processes)', function () {
  let service: RunningService

  before(async () => {
    service = await startService()
  })

  after(async () => service?.stop())

  it('ends quietly with exit code 0 when the reader of its output stops early', async () => {
    // `true` exits without reading, so every program writes to a pipe whose reader is gone (EPIPE).
    const programs = [
      [SERVICECTL, 'registrations'],
      [SERVICECTL, 'list'],
      [SERVICECTL, '--help'],
      ...['service-local', 'service-supervisor', 'service-worker'].map((program) => [join(ROOT, 'bin', `${program}.js`), '--help']),
    ]
    for (const args of programs) {
      const command = `node ${args.join(' ')} | true` + '; echo "exit ${PIPESTATUS[0]}" >&2'
      const {stderr} = await execa('bash', ['-c', command], {env: {SERVICE_ENDPOINT: service.url}})
      expect(stderr, args.join(' ')).to.equal('exit 0')
    }
  })
  it('with --json, prints a command line it cannot parse as one JSON error, and its one line on stderr', async () => {
    for (const [args, message] of [
      [['terminate'], 'Missing required flag model-uid'],
      [['list', '--bogus'], 'Nonexistent flag: --bogus'],
      [['chat', '-u', 'x', '--temperature', 'abc'], 'Parsing --temperature: Expected a number (e.g. 0.7) but received: abc'],
      [['scaffold'], 'Missing 2 required args: kind, name'],
    ] as const) {
      const {exitCode, stderr, stdout} = await servicectl([...args, '--json'], {env: {SERVICE_ENDPOINT: service.url}})
      expect(exitCode, args.join(' ')).to.equal(2)
      expect(JSON.parse(stdout), args.join(' ')).to.deep.equal({error: {code: 'invalid_arguments', message}})
      expect(stderr, args.join(' ')).to.equal(`Error: ${message}`)
    }
  })
})
