import {Flags} from '@oclif/core'

import {loadAuthConfig} from '../auth/config.js'
import {startLocalService} from '../service/local.js'
import {DEFAULT_PORT, loadSettings} from '../kernel/settings.js'
import {autoBuildFlag} from '../cli/auto-build-flag.js'
import {browserFlags, withBrowserFlags} from '../cli/browser-flags.js'
import {logFormatFlag} from '../cli/log-format-flag.js'
import {reachFlags, withReachFlags} from '../cli/reach-flags.js'
import {ServiceProcessCommand} from '../cli/service-command.js'
import {loadTlsIdentity, serviceTlsFlags, trustCertificateAuthority} from '../cli/tls.js'

export default class Local extends ServiceProcessCommand {
  static description = 'Supervisor, worker and HTTP API in one process; this is what `service-local` runs.'
  static examples = ['service-local', 'service-local --host 0.0.0.0 --port 9997 --log-level debug', 'service-local --auth-config auth.json']
  static flags = {
    ...browserFlags(),
    ...reachFlags(),
    'auto-build': autoBuildFlag(),
    'auth-config': Flags.string({description: 'Access-control config (JSON: auth_config and user_config); every call then needs an API key or a login.'}),
    host: Flags.string({char: 'H', description: 'Address to listen on (0.0.0.0 for all interfaces) [default: 127.0.0.1].'}),
    'load-on-demand': Flags.boolean({allowNo: true, description: 'Launch a known model that is not running (unloaded when idle, or not restored) when a request names it, for a caller who may start models (or SERVICE_LOAD_ON_DEMAND=1) [default: off].'}),
    'log-format': logFormatFlag(),
    'log-level': Flags.option({description: 'Log level [default: info].', options: ['debug', 'info', 'warn', 'error'] as const})(),
    'restore-models': Flags.boolean({allowNo: true, description: 'Relaunch the models that were running when the service last stopped (--no-restore-models, or SERVICE_RESTORE_MODELS=0, turns it off) [default: on].'}),
    ...serviceTlsFlags(),
    port: Flags.integer({char: 'p', description: `Port to listen on [default: ${DEFAULT_PORT}].`, max: 65_535, min: 0}),
  }
  static hidden = true
  static program = 'service-local'
  static usage = 'service-local [--host <host>] [--port <port>] [--log-level <level>] [--log-format text|json] [--auth-config <file>] [--allowed-hosts <names>] [--allowed-origins <origins>] [--tls-cert <file> --tls-key <file>]'

  async run(): Promise<void> {
    const {flags} = await this.parse(Local)
    const settings = await loadSettings()
    // Checked before anything starts, so a bad config costs nothing and leaves no service half up.
    const auth = flags['auth-config'] ? await loadAuthConfig(flags['auth-config']) : undefined
    const tls = await loadTlsIdentity(flags)
    const service = await startLocalService(
      this.config,
      {...withBrowserFlags(withReachFlags(settings, flags), flags), host: flags.host ?? settings.host, logFormat: flags['log-format'] ?? settings.logFormat, logLevel: flags['log-level'] ?? settings.logLevel, port: flags.port ?? settings.port, restoreModels: flags['restore-models'] ?? settings.restoreModels, loadOnDemand: flags['load-on-demand'] ?? settings.loadOnDemand},
      {auth, autoBuild: flags['auto-build'], tls},
    )
    this.log(`Service running at ${service.url} (web interface ${service.url}/ui, API ${service.url}/v1, reference ${service.url}/docs). Ctrl-C stops it.`)
    await this.untilStopped(service)
  }
}
