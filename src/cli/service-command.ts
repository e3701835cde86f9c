import {Command} from '@oclif/core'

import type {RunningService} from '../service/local.js'

import {isServiceErrorShape} from '../kernel/errors.js'

/** Base of the commands that run a service (`service-local`, `service-supervisor`, `service-worker`) until stopped. */
export abstract class ServiceProcessCommand extends Command {
  /** The program that runs this command (`service-local`), as the person typed it: refusals and help name it. */
  static program: string

  /** Runs until a signal (or, for a supervisor, `servicectl stop-cluster`) stops the service. */
  protected async untilStopped(service: RunningService): Promise<void> {
    // \`on\`, not \`once\`: execa's exit hook (signal-exit) re-raises a signal no other listener is left for, which
    // would end this process in the middle of its shutdown, before its model processes. A second signal joins the first stop.
    const stop = () => void service.stop()
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
    await service.stopped
  }

  /** A refused config or a port in use is one line for the person starting the service, not a stack trace. */
  protected async catch(error: Error & {exitCode?: number}): Promise<unknown> {
    if (isServiceErrorShape(error) && !('oclif' in error)) {
      this.logToStderr(`${(this.ctor as typeof ServiceProcessCommand).program}: ${error.message}`)
      this.exit(1)
    }

    return super.catch(error)
  }
}
