/**
 * Custom registrations persist under SERVICE_HOME across restarts; a bad file is skipped, never fatal. A
 * `file://` model_uri must name a usable file, and nothing about other paths can be learnt through it.
 */
import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {existsSync, readdirSync} from 'node:fs'
import {mkdir, readdir, readFile, symlink, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

describe('persisted registrations', () => {
  it('survive a restart, written atomically, while a corrupt file is reported and skipped', async () => {
    const home = await temporaryDirectory()
    const {registrationPath} = await writeTinyChatModel(await temporaryDirectory(), 'kept-model')
    let service = await startService({home})
    try {
      expect((await servicectl(['register', '-f', registrationPath], {env: {SERVICE_ENDPOINT: service.url}})).exitCode).to.equal(0)
    } finally {
      await service.stop()
    }

    const directory = join(home, 'registrations', 'LLM')
    expect(await readdir(directory)).to.deep.equal(['kept-model.json'])
    expect(JSON.parse(await readFile(join(directory, 'kept-model.json'), 'utf8')).model_name).to.equal('kept-model')
    await writeFile(join(directory, 'half-written.json'), '{"model_name": "half')
    await mkdir(join(home, 'registrations', 'no-such-type'))
    await writeFile(join(home, 'registrations', 'no-such-type', 'x.json'), '{}')

    service = await startService({home})
    try {
      const list = await servicectl(['registrations', '--json'], {env: {SERVICE_ENDPOINT: service.url}})
      expect(JSON.parse(list.stdout).map((r: {model_name: string}) => r.model_name)).to.include('kept-model')
      const {problems} = await (await fetch(`${service.url}/v1/cluster/plugins`)).json()
      const messages = problems.map((p: {message: string}) => p.message).join('\n')
      expect(messages).to.match(/skipped registration .*half-written.json: .*JSON/)
      expect(messages).to.match(/skipped registration .*x.json: model type "no-such-type" is not known/)
      expect(service.output()).to.contain('skipped registration')
    } finally {
      await service.stop()
    }
  })
})

describe('persisted registrations outside the allowed folders', () => {
  it('are skipped at start, saying which setting refused them', async () => {
    const home = await temporaryDirectory()
    const {family} = await writeTinyChatModel(await temporaryDirectory(), 'elsewhere')
    let service = await startService({home})
    try {
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family})).status).to.equal(200)
    } finally {
      await service.stop()
    }

    service = await startService({env: {SERVICE_ALLOWED_MODEL_DIRS: await temporaryDirectory()}, home})
    try {
      expect((await callApi(service, 'GET', '/v1/model_registrations/LLM/elsewhere')).status).to.equal(404)
      const {problems} = (await callApi(service, 'GET', '/v1/cluster/plugins')).body
      expect(problems.map((problem: {message: string}) => problem.message).join('\n')).to.match(/skipped registration .*elsewhere\.json: model_specs\[0\]\.model_uri \(file:\S+\) is outside the folders SERVICE_ALLOWED_MODEL_DIRS allows/)
    } finally {
      await service.stop()
    }
  })
})

describe('registrations of local files', () => {
  let service: RunningService
  let directory: string
  let allowed: string
  const register = (model: unknown) => callApi(service, 'POST', '/v1/model_registrations/LLM', {model, persist: false})
  const llm = (name: string, path: string) => ({model_name: name, model_specs: [{model_format: 'ggufv2', model_size_in_billions: '0_5', model_uri: pathToFileURL(path).href, quantization: 'q4_0'}]})

  before(async () => {
    directory = await temporaryDirectory()
    allowed = join(directory, 'allowed')
    await mkdir(allowed)
    await writeTinyChatModel(allowed, 'inside')
    await writeTinyChatModel(directory, 'outside')
    await writeFile(join(allowed, 'passwd'), 'root:x:0:0:root:/root:/bin/bash\n')
    await symlink('/etc/passwd', join(allowed, 'link-to-passwd.gguf'))
    await symlink(join(directory, 'outside.gguf'), join(allowed, 'escape.gguf'))
    execFileSync('mkfifo', [join(allowed, 'pipe.gguf')])
    service = await startService({env: {SERVICE_ALLOWED_MODEL_DIRS: `${allowed}:/etc:/proc:/dev`}})
  })

  after(async () => service?.stop())

  it('refuses a file that is not GGUF, a pipe, a device, /proc or a missing path with one answer that quotes nothing', async () => {
    const paths = ['/etc/passwd', join(allowed, 'passwd'), join(allowed, 'link-to-passwd.gguf'), join(allowed, 'pipe.gguf'), '/dev/zero', '/proc/self/environ', join(allowed, 'missing.gguf'), '/etc/no-such-file']
    for (const path of paths) {
      const {body, status} = await register(llm('probe', path))
      expect(status, path).to.equal(400)
      expect(body.error.param).to.equal('model_specs[0].model_uri')
      expect(body.error.message.replace(pathToFileURL(path).href, 'URI'), path).to.equal(
        "model_specs[0].model_uri (URI) cannot be used: it must be an existing, readable GGUF file (model_format ggufv2) on the service's machine, not a pipe, device, socket or kernel pseudo-file.",
      )
    }

    expect((await register(llm('inside', join(allowed, 'inside.gguf')))).status).to.equal(200)
  })

  it('confines model files to SERVICE_ALLOWED_MODEL_DIRS by where they resolve', async () => {
    for (const path of [join(directory, 'outside.gguf'), join(allowed, 'escape.gguf')]) {
      const {body, status} = await register(llm('outside', path))
      expect(status, path).to.equal(400)
      expect(body.error.message).to.contain('is outside the folders SERVICE_ALLOWED_MODEL_DIRS allows')
    }
  })

  it('does not repeat the text of a registration it cannot parse', async () => {
    const {body, status} = await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: 'root:x:0:0:root:/root:/bin/bash'})
    expect(status).to.equal(400)
    expect(body.error.message).to.equal('`model` is a string but is not valid JSON.')
    const unparsable = join(directory, 'secret.json')
    await writeFile(unparsable, '{"model_name": "x", "token": "s3cr3t" oops}')
    const cli = await servicectl(['register', '-f', unparsable], {env: {SERVICE_ENDPOINT: service.url}})
    expect(cli.exitCode).to.equal(1)
    expect(cli.stderr.replaceAll(/\s*\n ›\s+/g, ' ')).to.contain(`${unparsable} is not valid JSON (the mistake is at line 1 column 39).`)
    expect(cli.stderr).not.to.contain('s3cr3t')
  })
})

describe('concurrent registrations', () => {
  it('register and unregister one name one at a time, so the listing and the disk agree, also after a restart', async () => {
    const home = await temporaryDirectory()
    const {family} = await writeTinyChatModel(await temporaryDirectory(), 'raced')
    const path = join(home, 'registrations', 'LLM', 'raced.json')
    const listed = async (service: RunningService) => (await callApi(service, 'GET', '/v1/model_registrations/LLM/raced')).status === 200
    let service = await startService({home})
    try {
      const first = await Promise.all(Array.from({length: 16}, () => callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family})))
      expect(first.filter((response) => response.status === 200)).to.have.length(1)
      for (const loser of first.filter((response) => response.status !== 200)) {
        expect(loser.status).to.equal(400)
        expect(loser.body.error.message).to.match(/^model raced is already registered \(LLM\)/)
      }

      const mixed = await Promise.all(
        Array.from({length: 40}, (_, index) =>
          index % 2 ? callApi(service, 'DELETE', '/v1/model_registrations/LLM/raced') : callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family}),
        ),
      )
      for (const response of mixed) expect(response.status).to.be.oneOf([200, 400, 404])
      expect(existsSync(path)).to.equal(await listed(service))
      expect(readdirSync(join(home, 'registrations', 'LLM')).filter((file) => file !== 'raced.json')).to.deep.equal([])
      const before = await listed(service)
      await service.stop()
      service = await startService({home})
      expect(await listed(service)).to.equal(before)
    } finally {
      await service.stop()
    }
  })
})

describe('unregistering a running model', () => {
  it('is refused with a 409 naming the running uid, and works once the model is terminated', async () => {
    const service = await startService()
    try {
      const {family} = await writeTinyChatModel(await temporaryDirectory(), 'in-use')
      expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: true})).status).to.equal(200)
      const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'in-use', model_uid: 'in-use-1', n_ctx: 512, n_threads: 1})
      expect(launched.status).to.equal(200)
      const refused = await callApi(service, 'DELETE', '/v1/model_registrations/LLM/in-use')
      expect(refused.status).to.equal(409)
      expect(refused.body.error).to.include({message: 'in-use is running as in-use-1; terminate it (servicectl terminate <uid>) before you unregister it.', param: 'model_name'})
      expect((await callApi(service, 'GET', '/v1/model_registrations/LLM/in-use')).status).to.equal(200)
      expect((await callApi(service, 'DELETE', '/v1/models/in-use-1')).status).to.equal(200)
      expect((await callApi(service, 'DELETE', '/v1/model_registrations/LLM/in-use')).status).to.equal(200)
    } finally {
      await service.stop()
    }
  })
})

describe('servicectl registrations columns', () => {
  it("shows each model type's own columns, as its plugin declares them (registrationColumns), between Type and Is-built-in", async () => {
    const service = await startService()
    try {
      const headers = async (type: string) => (await servicectl(['registrations', '-t', type], {env: {SERVICE_ENDPOINT: service.url}})).stdout.split('\n')[0]
      expect(await headers('LLM')).to.match(/^Type\s+Name\s+Language\s+Ability\s+Context\s+Is-built-in$/)
      expect(await headers('image')).to.match(/^Type\s+Name\s+Family\s+Abilities\s+Is-built-in$/)
      const {body} = await callApi(service, 'GET', '/v1/cluster/plugins')
      expect(body.registration_columns.rerank).to.deep.equal([
        {field: 'model_name', header: 'Name'},
        {field: 'language', header: 'Language'},
        {field: 'max_tokens', header: 'Max tokens'},
      ])
    } finally {
      await service.stop()
    }
  })
})
