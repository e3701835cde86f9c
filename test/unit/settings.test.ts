import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {loadSettings} from '../../src/kernel/settings.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('settings', () => {
  it('reads a config file in SERVICE_HOME, lets the environment win over it, and defaults the rest', async () => {
    const home = await temporaryDirectory()
    await writeFile(`${home}/service.config.json`, JSON.stringify({log_level: 'debug', model_src: 'modelscope', port: 9998}))
    expect(await loadSettings({SERVICE_HOME: home})).to.deep.equal({
      allowedHosts: [],
      allowedImageHosts: [],
      allowedModelDirs: [],
      allowedOrigins: [],
      allowedPipSources: [],
      allowedPythonModules: [],
      home,
      host: '127.0.0.1',
      keepAliveMs: Number.POSITIVE_INFINITY,
      loadOnDemand: false,
      logFormat: 'text',
      logLevel: 'debug',
      maxRegistrationsPerUser: 200,
      modelSource: 'modelscope',
      onDemandWaitSeconds: 300,
      port: 9998,
      restoreModels: true,
    })
    const overridden = await loadSettings({SERVICE_HOME: home, SERVICE_LOG_LEVEL: 'warn', SERVICE_MODEL_SRC: 'huggingface'})
    expect(overridden).to.include({logLevel: 'warn', modelSource: 'huggingface'})
    expect(await loadSettings({SERVICE_HOME: await temporaryDirectory()})).to.include({logLevel: 'info', modelSource: 'huggingface', port: 9997})
  })

  it('reads the allow-lists of what registrations and launches may reach, and the registration quota, the environment over the config file', async () => {
    const home = await temporaryDirectory()
    await writeFile(
      `${home}/service.config.json`,
      JSON.stringify({allowed_image_hosts: ['images.internal'], allowed_pip_sources: ['https://pypi.org/simple'], allowed_python_modules: ['my_models', 'sklearn_models'], max_registrations_per_user: 5}),
    )
    expect(await loadSettings({SERVICE_HOME: home, SERVICE_ALLOWED_IMAGE_HOSTS: 'localhost, 10.0.0.7'})).to.deep.include({allowedImageHosts: ['localhost', '10.0.0.7']})
    expect(await loadSettings({SERVICE_HOME: home})).to.deep.include({allowedImageHosts: ['images.internal'], allowedPipSources: ['https://pypi.org/simple'], allowedPythonModules: ['my_models', 'sklearn_models'], maxRegistrationsPerUser: 5})
    const fromEnv = {SERVICE_ALLOWED_PIP_SOURCES: 'https://a.example/simple, /opt/wheels', SERVICE_ALLOWED_PYTHON_MODULES: 'other', SERVICE_HOME: home, SERVICE_MAX_REGISTRATIONS_PER_USER: '0'}
    expect(await loadSettings(fromEnv)).to.deep.include({allowedPipSources: ['https://a.example/simple', '/opt/wheels'], allowedPythonModules: ['other'], maxRegistrationsPerUser: 0})
    for (const bad of ['-1', '2.5', 'many'])
      expect(await loadSettings({SERVICE_HOME: home, SERVICE_MAX_REGISTRATIONS_PER_USER: bad}).catch((error: Error) => error.message)).to.contain('SERVICE_MAX_REGISTRATIONS_PER_USER (or max_registrations_per_user) must be a whole number')
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

  it('reads the keep-alive, on-demand launches and their wait from the environment over the config file, and refuses what it cannot read', async () => {
    const home = await temporaryDirectory()
    await writeFile(`${home}/service.config.json`, JSON.stringify({keep_alive: '5m', load_on_demand: true, on_demand_wait: 30}))
    expect(await loadSettings({SERVICE_HOME: home})).to.include({keepAliveMs: 300_000, loadOnDemand: true, onDemandWaitSeconds: 30})
    expect(await loadSettings({SERVICE_HOME: home, SERVICE_KEEP_ALIVE: '-1', SERVICE_LOAD_ON_DEMAND: '0', SERVICE_ON_DEMAND_WAIT: '0'})).to.include({
      keepAliveMs: Number.POSITIVE_INFINITY,
      loadOnDemand: false,
      onDemandWaitSeconds: 0,
    })
    const refusal = (env: Record<string, string>) => loadSettings({SERVICE_HOME: home, ...env}).catch((error: Error) => error.message)
    expect(await refusal({SERVICE_KEEP_ALIVE: 'a while'})).to.match(/^SERVICE_KEEP_ALIVE \(or keep_alive\) must be a duration such as "5m"/)
    expect(await refusal({SERVICE_ON_DEMAND_WAIT: '-3'})).to.match(/^SERVICE_ON_DEMAND_WAIT \(or on_demand_wait\) must be a number of seconds from 0 to 86400; it is "-3"/)
  })

  it('reads the folders model files may come from: the config file relative to itself, the environment separated like PATH', async () => {
    const home = await temporaryDirectory()
    await writeFile(`${home}/service.config.json`, JSON.stringify({allowed_model_dirs: ['models', '/srv/weights']}))
    expect((await loadSettings({SERVICE_HOME: home})).allowedModelDirs).to.deep.equal([join(home, 'models'), '/srv/weights'])
    expect((await loadSettings({SERVICE_ALLOWED_MODEL_DIRS: '/a:/b/c:', SERVICE_HOME: home})).allowedModelDirs).to.deep.equal(['/a', '/b/c'])
  })

  it('refuses a model hub it does not know, from the environment or the config file, naming where it was set', async () => {
    const home = await temporaryDirectory()
    let refused = await loadSettings({SERVICE_HOME: home, SERVICE_MODEL_SRC: 'bogus'}).catch((error: Error) => error)
    expect(refused).to.include({message: 'SERVICE_MODEL_SRC is "bogus", which is not a model hub; use one of: huggingface, modelscope.', status: 400})
    await writeFile(`${home}/service.config.json`, JSON.stringify({model_src: 'hugginface'}))
    refused = await loadSettings({SERVICE_HOME: home}).catch((error: Error) => error)
    expect((refused as Error).message).to.equal(`model_src in ${home}/service.config.json is "hugginface", which is not a model hub; use one of: huggingface, modelscope.`)
  })
})
