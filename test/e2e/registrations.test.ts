/** Custom registrations persist under SERVICE_HOME across restarts; a bad file is skipped, never fatal. */
import {expect} from 'chai'
import {mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {writeTinyChatModel} from '../helpers/models.js'
import {servicectl, startService, temporaryDirectory} from '../helpers/service.js'

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
