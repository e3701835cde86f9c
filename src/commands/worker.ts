import {Flags} from '@oclif/core'

import {CLUSTER_TOKEN_ENV} from '../service/cluster-settings.js'
import {startWorkerService} from '../service/worker-service.js'
import {loadSettings} from '../kernel/settings.js'
import {checkedEndpoint} from '../cli/endpoint.js'
import {autoBuildFlag} from '../cli/auto-build-flag.js'
import {browserFlags, withBrowserFlags} from '../cli/browser-flags.js'
import {logFormatFlag} from '../cli/log-format-flag.js'
import {ServiceProcessCommand} from '../cli/service-command.js'
import {loadTlsIdentity, serviceTlsFlags, trustCertificateAuthority} from '../cli/tls.js'

export default class Worker extends ServiceProcessCommand {
  static description = 'A worker of a cluster: runs the models the supervisor places on it. This is what `service-worker` runs.'
  static examples = ['service-worker -e http://10.0.0.1:9997 -H 10.0.0.2', 'service-worker -e http://10.0.0.1:9997 -H 10.0.0.2 -p 30001 --cluster-token "$(cat cluster.token)"']
  static flags = {
    ...browserFlags(),
    'auto-build': autoBuildFlag(),
    'cluster-token': Flags.string({description: `The cluster's shared secret (also ${CLUSTER_TOKEN_ENV}); needed when the supervisor has access control on.`, env: CLUSTER_TOKEN_ENV}),
    endpoint: Flags.string({char: 'e', description: 'The supervisor, e.g. http://10.0.0.1:9997.', required: true}),
    host: Flags.string({char: 'H', description: "This machine's address as the supervisor reaches it; the worker listens there.", required: true}),
    'log-format': logFormatFlag(),
    'log-level': Flags.option({description: 'Log level [default: info].', options: ['debug', 'info', 'warn', 'error'] as const})(),
    ...serviceTlsFlags(),
    port: Flags.integer({char: 'p', description: 'Port to listen on [default: any free port].', max: 65_535, min: 0}),
  }
  static hidden = true
  static program = 'service-worker'
  static usage = 'service-worker -e <supervisor endpoint> -H <worker host> [--port <port>] [--cluster-token <secret>] [--tls-cert <file> --tls-key <file>] [--tls-ca <file>] [--log-level <level>] [--log-format text|json]'

  async run(): Promise<void> {
    const {flags} = await this.parse(Worker)
    const endpoint = checkedEndpoint(flags.endpoint, '--endpoint')
    const settings = await loadSettings()
    const tls = await loadTlsIdentity(flags)
    await trustCertificateAuthority(flags['tls-ca'])
    const service = await startWorkerService(
      this.config,
      {...withBrowserFlags(settings, flags), host: flags.host, logFormat: flags['log-format'] ?? settings.logFormat, logLevel: flags['log-level'] ?? settings.logLevel, port: flags.port ?? 0},
      {autoBuild: flags['auto-build'], clusterToken: flags['cluster-token'], endpoint, tls},
    )
    this.log(`Worker running at ${service.url}, joined the supervisor at ${endpoint}. Ctrl-C stops it and its models.`)
    await this.untilStopped(service)
  }
}
