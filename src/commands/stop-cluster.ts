import {Flags} from '@oclif/core'

import {ServiceError} from '../kernel/errors.js'
import {ClientCommand} from '../cli/base-command.js'
import {CommandStopped} from '../cli/json-command.js'
import {confirm} from '../cli/prompt.js'

export default class StopCluster extends ClientCommand<typeof StopCluster> {
  static description = `Stop a cluster: every worker ends its models and exits, then the supervisor exits.

Lists the workers and their models and asks for confirmation first (--check skips that).`
  static examples = ['<%= config.bin %> stop-cluster -e http://10.0.0.1:9997', '<%= config.bin %> stop-cluster -e http://10.0.0.1:9997 --check']
  static flags = {
    check: Flags.boolean({description: 'Stop without asking for confirmation.'}),
  }

  async run(): Promise<{stopped: true; unreachable_workers: string[]}> {
    const client = this.client()
    const {mode, pid} = await client.clusterInfo()
    if (mode === 'local') {
      throw new ServiceError(
        400,
        'unsupported',
        `the service at ${client.endpoint} is a single-machine service (\`service-local\`), not a cluster; stop it with Ctrl-C where it runs, or with \`kill ${pid}\` (SIGTERM).`,
      )
    }

    if (!this.flags.check) {
      const workers = await client.workers()
      const lines = workers.map((worker) => `  ${worker.id} (${worker.state}): ${worker.models.length > 0 ? worker.models.join(', ') : 'no models'}`)
      this.logToStderr(`The supervisor at ${client.endpoint} and these workers will stop:\n${lines.join('\n') || '  (no workers)'}`)
      if (!(await confirm('Do you want to stop the cluster? (y/[n]) '))) throw new CommandStopped('declined', 'Declined: nothing was stopped.', 1)
    }

    const {unreachable_workers: unreachable} = await client.stopCluster()
    this.log(`Stopped the cluster at ${client.endpoint}.${unreachable.length > 0 ? ` These workers did not answer and may still run: ${unreachable.join(', ')}.` : ''}`)
    return {stopped: true, unreachable_workers: unreachable}
  }
}
