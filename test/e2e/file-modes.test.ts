/**
 * What a real service writes to SERVICE_HOME is readable by its user only: a registration, a launch (desired
 * models, launch history, logs), an upload and revoked tokens leave nothing with group or other permissions, and a
 * home left open by an earlier version is closed at start with a log line.
 */
import {expect} from 'chai'
import {chmod, lstat, readdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {apiKeyOf, passwordOf, writeTestAuthConfig} from '../helpers/auth.js'
import {writeTinyChatModel} from '../helpers/models.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

/** Every file and folder under `root` (itself included) that group or others may use, with its mode. */
async function openToOthers(root: string): Promise<string[]> {
  const entries = await readdir(root, {recursive: true, withFileTypes: true})
  const paths = [root, ...entries.filter((entry) => !entry.isSymbolicLink()).map((entry) => join(entry.parentPath, entry.name))]
  const modes = await Promise.all(paths.map(async (path) => ({mode: (await lstat(path)).mode & 0o777, path})))
  return modes.filter(({mode}) => (mode & 0o077) !== 0).map(({mode, path}) => `${path.slice(root.length) || '/'} ${mode.toString(8)}`)
}

describe('SERVICE_HOME file modes (service-local)', function () {
  let service: RunningService
  let home: string

  before(async () => {
    home = await temporaryDirectory()
    // As an earlier version left it: the home and a file in it readable by everyone.
    await chmod(home, 0o755)
    await writeFile(join(home, 'launch-history.json'), '[]\n', {mode: 0o644})
    await chmod(join(home, 'launch-history.json'), 0o644)
    service = await startService({args: ['--auth-config', await writeTestAuthConfig(await temporaryDirectory())], home})
  })

  after(async () => service?.stop())

  it('closes a home left open to others at start, saying so in the log', async () => {
    expect(service.output()).to.match(/SERVICE_HOME was readable by other users: removed group and other permissions from .*\(755\), .*launch-history\.json \(644\)/)
    expect((await lstat(home)).mode & 0o777).to.equal(0o700)
  })

  it('leaves nothing readable by others after a registration, a launch, an upload and a logout', async () => {
    const root = {authorization: `Bearer ${apiKeyOf('root')}`}
    const {family} = await writeTinyChatModel(await temporaryDirectory(), 'tiny-chat')
    // A registration may carry a password in an index URL, as a pip index's does.
    expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: true}, root)).status).to.equal(200)
    const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'llama.cpp', model_name: 'tiny-chat', n_ctx: 512, n_threads: 1}, root)
    expect(launched.status, JSON.stringify(launched.body)).to.equal(200)

    const form = new FormData()
    form.append('model', 'tiny-chat')
    form.append('file', new Blob([new Uint8Array(4096)], {type: 'audio/wav'}), 'speech.wav')
    const upload = await fetch(`${service.url}/v1/audio/transcriptions`, {body: form, headers: root, method: 'POST'})
    expect(upload.status, 'a chat model cannot transcribe').to.be.within(400, 499)

    const {body} = await callApi(service, 'POST', '/token', {password: passwordOf('nobody'), username: 'nobody'})
    expect((await callApi(service, 'POST', '/v1/auth/logout', undefined, {authorization: `Bearer ${body.access_token}`})).status).to.equal(200)

    const written = (await readdir(home, {recursive: true})).map(String)
    expect(written).to.include.members(['registrations/LLM/tiny-chat.json', 'desired-models.json', 'revoked-tokens.json', 'uploads', 'locks/supervisor.json', 'logs/models/tiny-chat.log'])
    expect(await readdir(join(home, 'uploads')), 'uploads are removed once answered').to.deep.equal([])
    expect(await openToOthers(home)).to.deep.equal([])
  })
})
