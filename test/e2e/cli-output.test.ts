/**
 * `servicectl` and the service programs as real processes in scripts: output piped into a reader that stops early,
 * `--json` errors, and what is printed for an empty or filtered answer.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {once} from 'node:events'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import {writeTinyChatModel} from '../helpers/models.js'
import {ROOT, type RunningService, SERVICECTL, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'

/** A stand-in for the service that answers `routes` ("GET /v1/…", query left out) with JSON, and records each request's route. */
async function fakeService(routes: Record<string, unknown>): Promise<{url: string; asked: string[]; server: Server}> {
  const asked: string[] = []
  const server = createServer((request, response) => {
    request.resume()
    const route = `${request.method} ${request.url!.split('?')[0]}`
    asked.push(route)
    response.writeHead(route in routes ? 200 : 404, {'content-type': 'application/json'})
    response.end(JSON.stringify(routes[route] ?? {error: {code: 'not_found', message: `no ${route} here`}}))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {asked, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`}
}

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

  it('with --json, a declined confirmation is a JSON error, what it asked about shown on stderr first', async () => {
    const fake = await fakeService({
      'GET /v1/cache/models/files': {model_version: 'm--1B--ggufv2--q4_0', paths: ['/cache/m/model.gguf']},
      'GET /v1/cluster/info': {mode: 'cluster', pid: 1},
      'GET /v1/cluster/workers': {list: [{id: 'w1', models: ['m'], state: 'ready'}]},
    })
    try {
      for (const [args, asked] of [
        [['remove-cache', '-n', 'm--1B--ggufv2--q4_0'], 'These files will be deleted:\n  /cache/m/model.gguf\nDo you want to proceed with the deletion? (y/[n]) '],
        [['remove-virtualenv', '-n', 'py3.11.7-0123'], 'Delete the Python environment py3.11.7-0123? (y/[n]) '],
        [['stop-cluster'], `The supervisor at ${fake.url} and these workers will stop:\n  w1 (ready): m\nDo you want to stop the cluster? (y/[n]) `],
      ] as const) {
        for (const json of [false, true]) {
          const {exitCode, stderr, stdout} = await servicectl([...args, '-e', fake.url, ...(json ? ['--json'] : [])], {input: 'n\n'})
          expect(exitCode, args[0]).to.equal(1)
          const stopped = args[0] === 'stop-cluster' ? 'stopped' : 'deleted'
          expect(stderr, args[0]).to.equal(`${asked}Declined: nothing was ${stopped}.`)
          expect(json ? JSON.parse(stdout) : stdout, args[0]).to.deep.equal(json ? {error: {code: 'declined', message: `Declined: nothing was ${stopped}.`}} : '')
        }
      }

      expect(fake.asked.filter((route) => route.startsWith('DELETE') || route.startsWith('POST'))).to.deep.equal([])
    } finally {
      fake.server.close()
    }
  })

  it('with --json, a launch cancelled with Ctrl-C says so on stderr and as a JSON error, and exits 130', async () => {
    const progress = {downloaded_bytes: 0, files: [], progress: 0, stage: 'downloading', total_bytes: 0}
    const fake = await fakeService({'GET /v1/models/slow/progress': progress, 'POST /v1/models': {model_uid: 'slow'}, 'POST /v1/models/slow/cancel': {}})
    try {
      const child = execa('node', [SERVICECTL, 'launch', '-n', 'slow', '--model-engine', 'llama.cpp', '--json', '-e', fake.url], {env: {NO_COLOR: '1'}, reject: false})
      await until(async () => (fake.asked.includes('GET /v1/models/slow/progress') ? true : undefined), 'the launch to be followed')
      child.kill('SIGINT')
      const {exitCode, stderr, stdout} = await child
      expect(exitCode).to.equal(130)
      expect(stderr).to.equal('Cancelling the launch of slow…\nCancelled the launch of slow; nothing of it was kept.')
      expect(JSON.parse(String(stdout))).to.deep.equal({error: {code: 'cancelled', message: 'Cancelled the launch of slow; nothing of it was kept.'}})
      expect(fake.asked).to.include('POST /v1/models/slow/cancel')
    } finally {
      fake.server.close()
    }
  })
  it('says in one line that the endpoint is not the service when a web server answers there, whatever the status', async () => {
    const page = createServer((request, response) => {
      request.resume()
      if (request.url === '/v1/models') response.writeHead(200, {'content-type': 'text/html'})
      else response.writeHead(404, 'File not found', {'content-type': 'text/html'})
      response.end('<!DOCTYPE HTML>\n<html>\n<body>Nothing here</body>\n</html>\n')
    })
    page.listen(0, '127.0.0.1')
    await once(page, 'listening')
    const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}`
    try {
      for (const [args, answered] of [
        [['list'], 'GET /v1/models with 200 OK'],
        [['terminate', '-u', 'x'], 'DELETE /v1/models/x with 404 File not found'],
      ] as const) {
        const message = `the server at ${url} is not the service: it answered ${answered} (text/html); point to the service with --endpoint or SERVICE_ENDPOINT.`
        const plain = await servicectl([...args], {env: {SERVICE_ENDPOINT: url}})
        expect(plain.exitCode, args[0]).to.equal(1)
        expect(plain.stderr, args[0]).to.equal(`Error: ${message}`)
        const json = await servicectl([...args, '--json'], {env: {SERVICE_ENDPOINT: url}})
        expect(JSON.parse(json.stdout), args[0]).to.deep.equal({error: {code: 'unexpected_response', message, status: 502}})
      }
    } finally {
      page.close()
    }
  })
  it('names a model type as its plugin does, however it was typed', async () => {
    const cli = (...args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})
    const listed = await cli('registrations', '-t', 'llm')
    expect(listed.stdout.split('\n')[0]).to.match(/^Type\s+Name\s+Language\s+Ability\s+Context\s+Is-built-in$/)
    expect(listed.stdout).to.match(/^LLM\s+qwen2.5-instruct\s+en, zh\s+/m)
    expect(listed.stdout).not.to.match(/^llm\s/m)
    expect(JSON.parse((await cli('registrations', '-t', 'Embedding', '--json')).stdout)[0]).to.include({model_type: 'embedding'})

    const {registrationPath} = await writeTinyChatModel(await temporaryDirectory(), 'typed-in-lower-case')
    const registered = await cli('register', '-t', 'llm', '-f', registrationPath, '--no-persist')
    expect(registered.stdout).to.equal('Registered typed-in-lower-case (LLM).')
    expect((await cli('unregister', '-t', 'llm', '-n', 'typed-in-lower-case')).exitCode).to.equal(0)
  })
  it('says which filter matched nothing, rather than that there is nothing at all', async () => {
    const cli = (...args: string[]) => servicectl(args, {env: {SERVICE_ENDPOINT: service.url}})
    expect((await cli('cached')).stdout).to.equal('There are no cached models.')
    expect((await cli('cached', '-n', 'nope')).stdout).to.equal('No cached model version matches --model-name nope; `servicectl cached` lists them all.')
    expect((await cli('history', '-n', 'nope')).stdout).to.equal('No launch matches --model-name nope; `servicectl history` lists them all.')
    const engine = await cli('engine', '-n', 'tiny-random-llm', '-f', 'foo')
    expect(engine.exitCode).to.equal(1)
    expect(engine.stdout).to.equal('')
    expect(engine.stderr).to.match(/^Error: no combination of tiny-random-llm has format foo; its formats here are ggufv2\b.*\.$/)
  })
})
