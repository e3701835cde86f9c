/** `servicectl` as a real process against a real `service-local`, as in the README's quickstart. */
import {expect} from 'chai'
import {execa} from 'execa'
import {once} from 'node:events'
import {stat} from 'node:fs/promises'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import {CLIENT_VERSION} from '../../src/client/version.js'
import {VERSION_HEADER} from '../../src/protocol/version.js'

import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, closedPort, ROOT, type RunningService, SERVICECTL, servicectl, startService, temporaryDirectory, until} from '../helpers/service.js'
import {closeTerminals, startTerminal} from '../helpers/terminal.js'

describe('servicectl (real processes)', function () {
  let service: RunningService
  let registrationPath: string
  const cli = (args: string[], input?: string) => servicectl([...args], {env: {SERVICE_ENDPOINT: service.url}, input})

  before(async () => {
    ;({registrationPath} = await writeTinyChatModel(await temporaryDirectory(), 'my-model'))
    service = await startService()
  })

  after(async () => service?.stop())

  it('prints its version with -v and --version', async () => {
    for (const flag of ['-v', '--version']) {
      const {exitCode, stdout} = await servicectl([flag])
      expect(exitCode).to.equal(0)
      expect(stdout).to.match(/^service-toolkit\/\d+\.\d+\.\d+ /)
    }
  })

  it('says in one line how to reach the service when it is not running', async () => {
    const {exitCode, stderr} = await servicectl(['list', '-e', `http://127.0.0.1:${await closedPort()}`])
    expect(exitCode).to.equal(3)
    expect(stderr.trim().split('\n')).to.have.length(1)
    expect(stderr).to.match(/^Error: cannot reach the service at http:\/\/127.0.0.1:\d+ .*start it with `service-local`/)
  })

  it('runs the quickstart: register, launch with engine parameters, list, chat, generate, terminate, unregister', async () => {
    const registered = await cli(['register', '-t', 'LLM', '-f', registrationPath])
    expect(registered.stdout).to.contain('Registered my-model (LLM).')

    const registrations = await cli(['registrations', '-t', 'LLM'])
    expect(registrations.stdout).to.match(/LLM\s+my-model\s+en\s+chat, generate\s+2048\s+false/)
    expect(registrations.stdout).to.match(/LLM\s+qwen2.5-instruct\s+en, zh\s+.*true/)

    const launched = await cli(['launch', '-n', 'my-model', '-en', 'llama.cpp', '-f', 'ggufv2', '-s', '0_5', '-q', 'q4_0', '--n_ctx', '2048', '--n_threads=1'])
    expect(launched.stderr).to.equal('')
    expect(launched.stdout.trim()).to.equal('Model uid: my-model')

    const listed = await cli(['list'])
    expect(listed.stdout.split('\n')[0]).to.match(/^UID\s+Type\s+Name\s+Engine\s+Format\s+Size \(in billions\)\s+Quantization\s+Status$/)
    expect(listed.stdout).to.match(/my-model\s+LLM\s+my-model\s+llama.cpp\s+ggufv2\s+0_5\s+q4_0\s+ready/)
    const json = JSON.parse((await cli(['list', '--json'])).stdout)
    expect(json[0]).to.include({engine_parameters: json[0].engine_parameters, id: 'my-model', model_engine: 'llama.cpp'})
    expect(json[0].engine_parameters).to.deep.equal({n_ctx: 2048, n_threads: 1})

    const chat = await cli(['chat', '--model-uid', 'my-model', '--max-tokens', '5', '--temperature', '0'], 'Hello\nAnd again\n')
    expect(chat.exitCode).to.equal(0)
    const answers = chat.stdout.trim().split('\n')
    expect(answers).to.have.length(2)
    for (const answer of answers) expect(answer).to.match(/^Assistant: \S/)
    const quiet = await cli(['chat', '--model-uid', 'my-model', '--max_tokens', '5', '--temperature', '0', '--no-stream'], 'Hello\n')
    expect(quiet.stdout.trim()).to.equal(answers[0])

    // With --json, stdout holds the JSON alone; the conversation goes to stderr.
    const generated = await cli(['generate', '--model-uid', 'my-model', '--max-tokens', '4', '--json'], 'Once upon a time\n')
    const result = JSON.parse(generated.stdout)
    expect(result.completions[0].prompt).to.equal('Once upon a time')
    expect(result.completions[0].completion).to.be.a('string').and.not.equal('')
    expect(generated.stderr).to.equal(`Completion: ${result.completions[0].completion}`)
    const chatJson = await cli(['chat', '--model-uid', 'my-model', '--max-tokens', '4', '--json'], 'Hello\n')
    expect(JSON.parse(chatJson.stdout).messages.map((message: {role: string}) => message.role)).to.deep.equal(['user', 'assistant'])

    expect((await cli(['terminate', '--model-uid', 'my-model'])).stdout).to.contain('Terminated my-model.')
    expect((await cli(['list'])).stdout).to.contain('No models are running.')
    expect((await cli(['unregister', '-t', 'LLM', '-n', 'my-model'])).stdout).to.contain('Unregistered my-model.')
  })

  it('shows a server error as one line with a non-zero exit code, or as JSON with --json', async () => {
    const failed = await cli(['launch', '-n', 'qwen2.5-instruct', '--model-engine', 'llama.cpp', '--n_bogus', '1'])
    expect(failed.exitCode).to.equal(1)
    expect(failed.stderr.trim()).to.equal('Error: unknown parameter "n_bogus" for engine llama.cpp; it accepts: enable_thinking, flash_attn, n_batch, n_ctx, n_gpu_layers, n_parallel, n_threads, reasoning_format, use_mmap.')
    const json = await cli(['terminate', '--model-uid', 'ghost', '--json'])
    expect(json.exitCode).to.equal(1)
    expect(JSON.parse(json.stdout).error).to.deep.include({code: 'model_not_found', status: 404})
  })

  it('shows which engines, formats, sizes and quantizations a catalogue model can use', async () => {
    const {stdout} = await cli(['engine', '-n', 'qwen2.5-instruct', '--model-engine', 'llama.cpp', '-s', '0.5'])
    expect(stdout.split('\n')[0]).to.match(/^Name\s+Engine\s+Format\s+Size \(in billions\)\s+Quantization\s+Available$/)
    expect(stdout).to.match(/qwen2.5-instruct\s+llama.cpp\s+ggufv2\s+0_5\s+q4_k_m\s+yes$/m)
    expect(stdout).not.to.match(/\s1_5\s/)
  })

  it('traces its HTTP calls with --log-level debug', async () => {
    const {stderr} = await cli(['list', '--log-level', 'debug'])
    expect(stderr).to.match(/^GET http:\/\/127.0.0.1:\d+\/v1\/models → 200 \(\d+ ms\)$/m)
  })

  it('says no login is needed when access control is off', async () => {
    const {exitCode, stdout} = await cli(['login', '--username', 'alice', '--password', 'secret'])
    expect(exitCode).to.equal(0)
    expect(stdout.trim()).to.equal(`Access control is off at ${service.url}; every command works without logging in.`)
  })

  it('finds the service from -H and -p, and accepts -ak', async () => {
    const {port} = new URL(service.url)
    const {exitCode, stdout} = await servicectl(['list', '-H', '127.0.0.1', '-p', port, '-ak', 'sk-0123456789abc'])
    expect(exitCode).to.equal(0)
    expect(stdout).to.contain('No models are running.')
  })

  it('takes the global options before the subcommand as well as after it', async () => {
    const {port} = new URL(service.url)
    for (const args of [['-p', port, 'list'], ['-H', '127.0.0.1', '--port', port, 'list'], ['-e', service.url, '-ak', 'sk-0123456789abc', 'list'], [`--port=${port}`, 'list', '--json']]) {
      const {exitCode, stdout} = await servicectl(args)
      expect(exitCode, args.join(' ')).to.equal(0)
      expect(stdout, args.join(' ')).to.match(/No models are running\.|^\[\]$/)
    }

    const traced = await servicectl(['--log-level', 'debug', '-p', port, 'list'])
    expect(traced.stderr).to.match(/^GET http:\/\/127.0.0.1:\d+\/v1\/models → 200 \(\d+ ms\)$/m)
    expect((await servicectl(['-v'])).stdout).to.match(/^service-toolkit\/\d+\.\d+\.\d+ /)
  })

  it('refuses a non-number for a numeric option, naming the option', async () => {
    for (const [args, message] of [
      [['chat', '-u', 'x', '--temperature', 'abc'], /--temperature[\s\S]*Expected a number \(e\.g\. 0\.7\) but received: abc/],
      [['generate', '-u', 'x', '--temperature', ''], /--temperature[\s\S]*Expected a number/],
      [['chat', '-u', 'x', '--max-tokens', '5x'], /Expected an integer but received: 5x/],
      [['launch', '-n', 'x', '--n-gpu', 'two'], /--n-gpu[\s\S]*Expected "auto" or a whole number of GPUs \(e\.g\. 1\) but received: two/],
      [['list', '-p', 'http'], /Expected an integer but received: http/],
    ] as const) {
      const {exitCode, stderr} = await cli([...args], 'Hello\n')
      expect(exitCode, args.join(' ')).to.equal(2)
      expect(stderr, args.join(' ')).to.match(message)
    }
  })

  it('says to add http:// to an endpoint given without it', async () => {
    const given = await servicectl(['list', '-e', '127.0.0.1:9997'])
    expect(given.exitCode).to.equal(1)
    expect(given.stderr.trim()).to.equal('Error: --endpoint "127.0.0.1:9997" is not an http:// or https:// address; write it as http://127.0.0.1:9997.')
    const fromEnvironment = await servicectl(['list'], {env: {SERVICE_ENDPOINT: 'localhost:9997'}})
    expect(fromEnvironment.stderr.trim()).to.equal('Error: SERVICE_ENDPOINT "localhost:9997" is not an http:// or https:// address; write it as http://localhost:9997.')
  })

  it('says how a single-machine service is stopped when stop-cluster reaches service-local', async () => {
    const {exitCode, stderr} = await cli(['stop-cluster', '--check'])
    expect(exitCode).to.equal(1)
    expect(stderr).to.contain(`the service at ${service.url} is a single-machine service (\`service-local\`), not a cluster; stop it with Ctrl-C where it runs, or with \`kill ${service.process.pid}\` (SIGTERM).`)
    expect((await callApi(service, 'GET', '/v1/models')).status).to.equal(200)
  })

  it('has help, shell completion and suggestions for mistyped commands', async () => {
    const help = await servicectl(['help'])
    expect(help.exitCode).to.equal(0)
    expect(help.stdout).to.match(/^USAGE\n {2}\$ servicectl \[COMMAND\]$/m)
    expect(help.stdout).to.match(/^ {2}launch +Launch a model\./m)
    expect((await servicectl(['help', 'list'])).stdout).to.match(/^ {2}\$ servicectl list /m)
    const completion = await servicectl(['autocomplete', 'bash'], {env: {SERVICECTL_CACHE_DIR: await temporaryDirectory()}})
    expect(completion.exitCode).to.equal(0)
    expect(completion.stdout).to.contain('servicectl autocomplete')
    const typo = await servicectl(['lsit'])
    expect(typo.exitCode).to.equal(127)
    expect(typo.stderr).to.contain('lsit is not a servicectl command')
    // Not on a terminal there is no one to ask, so the suggestion is printed.
    expect(typo.stderr).to.contain('Did you mean list?')
  })

  it('shows the usage line of service-local, service-supervisor and service-worker as they are typed', async () => {
    for (const program of ['service-local', 'service-supervisor', 'service-worker']) {
      const {stdout} = await execa('node', [join(ROOT, 'bin', `${program}.js`), '--help'], {env: {NO_COLOR: '1'}})
      expect(stdout.split('\n').slice(0, 5).join('\n')).to.match(new RegExp(`^USAGE\\n {2}\\$ ${program} [[-]`, 'm'))
      expect(stdout).not.to.contain('servicectl')
    }
  })

  describe('on a terminal', () => {
    const typedModel = 'typed-model'
    let home: string

    before(async () => {
      const {family} = await writeTinyChatModel(await temporaryDirectory(), typedModel)
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
      expect((await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: typedModel, n_ctx: 512, n_threads: 1})).status).to.equal(200)
      home = await temporaryDirectory()
    })

    after(closeTerminals)

    const chat = () => startTerminal([process.execPath, SERVICECTL, 'chat', '-u', typedModel, '--max-tokens', '3', '--temperature', '0', '-e', service.url], {SERVICE_HOME: home})

    it('keeps the chat prompt while a line is edited, recalls earlier lines with the up arrow, and keeps them for the next chat', async () => {
      const first = await chat()
      await first.waitForRow(/^User:$/)
      await first.type('helo')
      await first.press('Left')
      await first.type('l')
      await first.waitForRow(/^User: hello$/)
      await first.press('Enter')
      await first.waitForRow(/^Assistant: \S/)
      await first.type('second')
      await first.press('Enter')
      await until(async () => ((await first.screen()).filter((row) => row.startsWith('Assistant: ')).length === 2 ? true : undefined), 'the second answer')
      await first.press('Up', 'Up')
      await first.waitForRow(/^User: hello$/)
      await first.press('C-u', 'Enter')
      expect(await first.exited()).to.equal(0)

      const next = await chat()
      await next.waitForRow(/^User:$/)
      await next.press('Up')
      await next.waitForRow(/^User: second$/)
      await next.press('Up')
      await next.waitForRow(/^User: hello$/)
      const history = await stat(join(home, 'history', 'chat'))
      expect(history.mode & 0o777).to.equal(0o600)
    })

    it('stops a streamed answer with Ctrl-C and goes on with the chat, the answer kept as far as it came', async () => {
      // A server streaming one word every 50 ms for ten seconds, in the OpenAI shape, recording what it was asked.
      const asked: Array<{messages: Array<{role: string; content: string}>}> = []
      const slow = createServer((request, response) => {
        let body = ''
        request.on('data', (chunk) => (body += chunk))
        request.on('end', () => {
          asked.push(JSON.parse(body))
          response.writeHead(200, {'content-type': 'text/event-stream', [VERSION_HEADER]: CLIENT_VERSION})
          let words = 0
          const timer = setInterval(() => {
            if (response.destroyed || ++words > 200) return void (clearInterval(timer), response.end('data: [DONE]\n\n'))
            response.write(`data: ${JSON.stringify({choices: [{delta: {content: 'word '}, finish_reason: null, index: 0}], id: 'x', model: 'm', object: 'chat.completion.chunk'})}\n\n`)
          }, 50)
        })
      })
      slow.listen(0, '127.0.0.1')
      await once(slow, 'listening')
      try {
        const terminal = await startTerminal([process.execPath, SERVICECTL, 'chat', '-u', 'm', '-e', `http://127.0.0.1:${(slow.address() as AddressInfo).port}`], {SERVICE_HOME: home})
        await terminal.waitForRow(/^User:$/)
        await terminal.type('tell me')
        await terminal.press('Enter')
        await terminal.waitForRow(/^Assistant: word word/)
        await terminal.press('C-c')
        await terminal.waitForRow(/^\(stopped\)$/)
        await terminal.waitForRow(/^User:$/)
        await terminal.type('and then')
        await terminal.press('Enter')
        await until(async () => (asked.length === 2 ? true : undefined), 'the second question')
        expect(asked[1].messages.map((message) => message.role)).to.deep.equal(['user', 'assistant', 'user'])
        expect(asked[1].messages[1].content).to.match(/^(word )+$/)
        await terminal.press('C-c')
        await until(async () => ((await terminal.screen()).filter((row) => row === '(stopped)').length === 2 ? true : undefined), 'the second stop')
        await terminal.press('Enter')
        expect(await terminal.exited()).to.equal(0)
      } finally {
        slow.closeAllConnections()
        slow.close()
      }
    })

    it('asks "did you mean" for a mistyped command', async () => {
      const typo = await startTerminal([process.execPath, SERVICECTL, 'lsit', '-e', service.url])
      await typo.waitForRow(/Did you mean list\?/)
      await typo.press('Enter')
      await typo.waitForRow(/No models are running\.|typed-model/)
    })
  })
})
