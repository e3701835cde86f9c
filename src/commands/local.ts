import {Command, Flags} from '@oclif/core'

import {startLocalService} from '../cluster/local.js'
import {DEFAULT_PORT, loadSettings} from '../kernel/settings.js'

export default class Local extends Command {
  static description = 'Supervisor, worker and HTTP API in one process; this is what `service-local` runs.'
  static examples = ['service-local', 'service-local --host 0.0.0.0 --port 9997 --log-level debug']
  static flags = {
    host: Flags.string({char: 'H', description: 'Address to listen on (0.0.0.0 for all interfaces) [default: 127.0.0.1].'}),
    'log-level': Flags.option({description: 'Log level [default: info].', options: ['debug', 'info', 'warn', 'error'] as const})(),
    port: Flags.integer({char: 'p', description: `Port to listen on [default: ${DEFAULT_PORT}].`, max: 65_535, min: 0}),
  }
  static hidden = true
  static usage = 'service-local [--host <host>] [--port <port>] [--log-level <level>]'

  async run(): Promise<void> {
    const {flags} = await this.parse(Local)
    const settings = await loadSettings()
    const service = await startLocalService(this.config, {
      ...settings,
      host: flags.host ?? settings.host,
      logLevel: flags['log-level'] ?? settings.logLevel,
      port: flags.port ?? settings.port,
    })
    this.log(`Service running at ${service.url} (API ${service.url}/v1, reference ${service.url}/docs). Ctrl-C stops it.`)
    await new Promise<void>((resolve) => {
      const stop = () => void service.stop().then(resolve)
      process.once('SIGINT', stop)
      process.once('SIGTERM', stop)
    })
  }
}
