import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'

import {loadSettings} from '../../src/kernel/settings.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('settings', () => {
  it('reads a config file in SERVICE_HOME, lets the environment win over it, and defaults the rest', async () => {
    const home = await temporaryDirectory()
    await writeFile(`${home}/service.config.json`, JSON.stringify({log_level: 'debug', model_src: 'modelscope', port: 9998}))
    expect(await loadSettings({SERVICE_HOME: home})).to.deep.equal({home, host: '127.0.0.1', logLevel: 'debug', modelSource: 'modelscope', port: 9998})
    const overridden = await loadSettings({SERVICE_HOME: home, SERVICE_LOG_LEVEL: 'warn', SERVICE_MODEL_SRC: 'huggingface'})
    expect(overridden).to.include({logLevel: 'warn', modelSource: 'huggingface'})
    expect(await loadSettings({SERVICE_HOME: await temporaryDirectory()})).to.include({logLevel: 'info', modelSource: 'huggingface', port: 9997})
  })
})
