import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {loadSettings} from '../../src/kernel/settings.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('settings', () => {
  it('reads a config file in SERVICE_HOME, lets the environment win over it, and defaults the rest', async () => {
    const home = await temporaryDirectory()
    await writeFile(`${home}/service.config.json`, JSON.stringify({log_level: 'debug', model_src: 'modelscope', port: 9998}))
    expect(await loadSettings({SERVICE_HOME: home})).to.deep.equal({allowedHosts: [], allowedModelDirs: [], allowedOrigins: [], home, host: '127.0.0.1', logFormat: 'text', logLevel: 'debug', modelSource: 'modelscope', port: 9998, restoreModels: true})
    const overridden = await loadSettings({SERVICE_HOME: home, SERVICE_LOG_LEVEL: 'warn', SERVICE_MODEL_SRC: 'huggingface'})
    expect(overridden).to.include({logLevel: 'warn', modelSource: 'huggingface'})
    expect(await loadSettings({SERVICE_HOME: await temporaryDirectory()})).to.include({logLevel: 'info', modelSource: 'huggingface', port: 9997})
  })

  it('reads the log format from the config file, the environment over it, and defaults to text', async () => {
    const home = await temporaryDirectory()
    expect(await loadSettings({SERVICE_HOME: home})).to.include({logFormat: 'text'})
    await writeFile(`${home}/service.config.json`, JSON.stringify({log_format: 'json'}))
    expect(await loadSettings({SERVICE_HOME: home})).to.include({logFormat: 'json'})
    expect(await loadSettings({SERVICE_HOME: home, SERVICE_LOG_FORMAT: 'text'})).to.include({logFormat: 'text'})
    expect(await loadSettings({SERVICE_HOME: await temporaryDirectory(), SERVICE_LOG_FORMAT: 'JSON'})).to.include({logFormat: 'json'})
  })

  it('reads the hosts and origins browsers may use: comma-separated in the environment, a list or a string in the config file', async () => {
    const home = await temporaryDirectory()
    await writeFile(`${home}/service.config.json`, JSON.stringify({allowed_hosts: ['service-toolkit', '*.svc'], allowed_origins: 'https://a.example, https://b.example'}))
    expect(await loadSettings({SERVICE_HOME: home})).to.deep.include({allowedHosts: ['service-toolkit', '*.svc'], allowedOrigins: ['https://a.example', 'https://b.example']})
    expect(await loadSettings({SERVICE_ALLOWED_HOSTS: 'proxy.example,, *', SERVICE_ALLOWED_ORIGINS: '', SERVICE_HOME: home})).to.deep.include({allowedHosts: ['proxy.example', '*'], allowedOrigins: []})
  })

  it('restores models unless SERVICE_RESTORE_MODELS or restore_models in the config file turns it off, the environment winning', async () => {
    const home = await temporaryDirectory()
    expect(await loadSettings({SERVICE_HOME: home})).to.include({restoreModels: true})
    for (const off of ['0', 'false', 'OFF', 'no']) expect(await loadSettings({SERVICE_HOME: home, SERVICE_RESTORE_MODELS: off})).to.include({restoreModels: false})
    await writeFile(`${home}/service.config.json`, JSON.stringify({restore_models: false}))
    expect(await loadSettings({SERVICE_HOME: home})).to.include({restoreModels: false})
    expect(await loadSettings({SERVICE_HOME: home, SERVICE_RESTORE_MODELS: '1'})).to.include({restoreModels: true})
  })

  it('reads the folders model files may come from: the config file relative to itself, the environment separated like PATH', async () => {
    const home = await temporaryDirectory()
    await writeFile(`${home}/service.config.json`, JSON.stringify({allowed_model_dirs: ['models', '/srv/weights']}))
    expect((await loadSettings({SERVICE_HOME: home})).allowedModelDirs).to.deep.equal([join(home, 'models'), '/srv/weights'])
    expect((await loadSettings({SERVICE_ALLOWED_MODEL_DIRS: '/a:/b/c:', SERVICE_HOME: home})).allowedModelDirs).to.deep.equal(['/a', '/b/c'])
  })
})
