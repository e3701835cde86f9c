import {Flags} from '@oclif/core'

import {loadAuthConfig} from '../auth/config.js'
import {CLUSTER_TOKEN_ENV, clusterTiming} from '../service/cluster-settings.js'
import {startLocalService} from '../service/local.js'
import {DEFAULT_PORT, loadSettings} from '../kernel/settings.js'
import {browserFlags, withBrowserFlags} from '../cli/browser-flags.js'
import {logFormatFlag} from '../cli/log-format-flag.js'
import {reachFlags, withReachFlags} from '../cli/reach-flags.js'
import {ServiceProcessCommand} from '../cli/service-command.js'
import {loadTlsIdentity, serviceTlsFlags, trustCertificateAuthority} from '../cli/tls.js'

export default class Supervisor extends ServiceProcessCommand {
  static description = 'The supervisor of a cluster: the HTTP API, docs and every model route; workers join it. This is what `service-supervisor` runs.'
  static examples = ['service-supervisor -H 10.0.0.1', 'service-supervisor -H 10.0.0.1 --auth-config auth.json --cluster-token "$(cat cluster.token)"']
  static flags = {
    ...browserFlags(),
    ...reachFlags(),
    'auth-config': Flags.string({description: 'Access-control config (JSON: auth_config and user_config); workers then need --cluster-token.'}),
    'cluster-token': Flags.string({description: `Shared secret workers must present (also ${CLUSTER_TOKEN_ENV}); required with --auth-config.`, env: CLUSTER_TOKEN_ENV}),
    host: Flags.string({char: 'H', description: 'Address to listen on: this machine\'s address as clients and workers reach it [default: 127.0.0.1].'}),
    'load-on-demand': Flags.boolean({allowNo: true, description: 'Launch a known model that is not running (unloaded when idle, or not restored) when a request names it, for a caller who may start models (or SERVICE_LOAD_ON_DEMAND=1) [default: off].'}),
    'log-format': logFormatFlag(),
    'log-level': Flags.option({description: 'Log level [default: info].', options: ['debug', 'info', 'warn', 'error'] as const})(),
    ...serviceTlsFlags(),
    port: Flags.integer({char: 'p', description: `Port to listen on [default: ${DEFAULT_PORT}].`, max: 65_535, min: 0}),
    'restore-models': Flags.boolean({allowNo: true, description: 'After a restart, relaunch the desired models that no rejoining worker brings back (--no-restore-models, or SERVICE_RESTORE_MODELS=0, turns it off) [default: on].'}),
  }
  static hidden = true
  static program = 'service-supervisor'
  static usage = 'service-supervisor -H <host> [--port <port>] [--auth-config <file> --cluster-token <secret>] [--allowed-hosts <names>] [--allowed-origins <origins>] [--tls-cert <file> --tls-key <file>] [--tls-ca <file>] [--log-level <level>] [--log-format text|json]'

  async run(): Promise<void> {
    const {flags} = await this.parse(Supervisor)
    const settings = await loadSettings()
    const auth = flags['auth-config'] ? await loadAuthConfig(flags['auth-config']) : undefined
    const tls = await loadTlsIdentity(flags)
    // The workers' own ports serve HTTPS with certificates the supervisor may have to be told to trust.
    await trustCertificateAuthority(flags['tls-ca'])
    if (auth && !flags['cluster-token'])
      this.error(`with --auth-config, workers must prove they belong: give a shared secret with --cluster-token or ${CLUSTER_TOKEN_ENV} (and the same to every worker).`, {exit: 1})
    const service = await startLocalService(
      this.config,
      {...withBrowserFlags(withReachFlags(settings, flags), flags), host: flags.host ?? settings.host, logFormat: flags['log-format'] ?? settings.logFormat, logLevel: flags['log-level'] ?? settings.logLevel, port: flags.port ?? settings.port, restoreModels: flags['restore-models'] ?? settings.restoreModels, loadOnDemand: flags['load-on-demand'] ?? settings.loadOnDemand},
      {auth, cluster: {clusterToken: flags['cluster-token'], timing: clusterTiming()}, tls},
    )
    this.log(`Supervisor running at ${service.url} (web interface ${service.url}/ui, API ${service.url}/v1, reference ${service.url}/docs). Join workers with \`service-worker -e ${service.url} -H <worker host>\`. Ctrl-C stops it.`)
    await this.untilStopped(service)
  }
}
