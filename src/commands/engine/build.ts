import {Args, Flags} from '@oclif/core'

import type {Logger} from '../../kernel/contracts.js'

import {
  type EngineBuildPlan,
  findOnPath,
  missingRequirementsError,
  planEngineBuild,
  type ProgramRunner,
  runEngineBuild,
  runProgram,
} from '../../cli/engine-build.js'
import {JsonCommand} from '../../cli/json-command.js'
import {isServiceErrorShape} from '../../kernel/errors.js'
import {takeBuildLock} from '../../service/build-process.js'
import {loadKernel} from '../../kernel/hooks.js'
import {shellQuote} from '../../util/format.js'

interface BuildOutput {
  engine: string
  plugin: string
  command: string[]
  requirements: Array<{name: string; programs: string[]; found: string | null}>
  dry_run: boolean
  exit_code?: number
  report?: string
}

export default class BuildEngine extends JsonCommand {
  static args = {
    engine: Args.string({description: 'The engine, as --model-engine names it (e.g. llama.cpp).', required: true}),
  }
  static description =
    'Build an engine for this machine, where its plugin offers a build (llama.cpp: compile its portable build, right for any CPU it is copied to). It runs here, without the service; on a cluster, run it on every worker or copy its build to them.'
  static examples = ['<%= config.bin %> engine build llama.cpp', '<%= config.bin %> engine build llama.cpp --dry-run']
  static flags = {
    'dry-run': Flags.boolean({default: false, description: 'Print the command and check what it needs, without running it.'}),
  }

  async run(): Promise<BuildOutput> {
    const {args, flags} = await this.parse(BuildEngine)
    const kernel = await loadKernel(this.config, this.pluginLog())
    const plan = planEngineBuild(kernel, args.engine, (program) => findOnPath(program))
    this.describe(plan)
    const output: BuildOutput = {
      command: plan.command,
      dry_run: flags['dry-run'],
      engine: plan.engine,
      plugin: plan.plugin,
      requirements: plan.requirements.map(({found, name, programs}) => ({found: found ?? null, name, programs})),
    }
    if (flags['dry-run']) {
      const missing = missingRequirementsError(plan)
      if (missing) throw missing
      this.log('Dry run: nothing was run.')
      return output
    }

    // With --json, standard output carries only the result; the build's own output goes to standard error.
    const run: ProgramRunner = (command, stdout) => runProgram(command, stdout === 'inherit' && this.jsonEnabled() ? 'stderr' : stdout)
    // The lock a service's background build holds while it writes the same folder (src/service/engine-auto-builder.ts),
    // taken once the build could run at all.
    const missing = missingRequirementsError(plan)
    if (missing) throw missing
    const release = plan.auto ? await takeBuildLock(plan.auto.folder) : undefined
    if (plan.auto && !release)
      this.refuse(`a service on this machine is building ${plan.engine} in the background; GET /v1/engines/${plan.engine}/build shows its progress. Run this again once it has ended.`, 1, 'conflict')
    const result = await runEngineBuild(plan, run).finally(() => release?.())
    if (result.exitCode !== 0) {
      const how = result.signal ? `was stopped by ${result.signal}` : `failed with exit code ${result.exitCode}`
      this.refuse(`building ${plan.engine} ${how}; its output above says why.`, result.exitCode)
    }

    this.log('')
    this.log(`Built ${plan.engine}.${result.report ? ` ${result.report}` : ''}`)
    if (result.reportProblem) this.warn(`could not tell which build ${plan.engine} uses now: ${result.reportProblem}`)
    this.log('Every model runs in a process of its own, so models launched from now on use the new build without restarting the service; terminate and launch a running model again to move it over.')
    return {...output, exit_code: result.exitCode, report: result.report}
  }

  /** A refusal is one line for a person, never a stack trace. */
  protected async catch(error: Error & {exitCode?: number}): Promise<unknown> {
    if (isServiceErrorShape(error) && !('oclif' in error)) this.refuse(error.message, 1, error.code)
    return super.catch(error)
  }

  /** The JSON error says the exit code too: a build's is the build program's own. */
  private refuse(message: string, exitCode: number, code?: string): never {
    this.fail({code, exit_code: exitCode, message}, exitCode)
  }

  private describe(plan: EngineBuildPlan): void {
    this.log(`${plan.engine} (${plan.plugin}): ${plan.description}`)
    for (const requirement of plan.requirements)
      this.log(`  needs ${requirement.name}: ${requirement.found ?? `missing (none of ${requirement.programs.join(', ')} on PATH)`}`)
    this.log(`Command: ${plan.command.map((part) => shellQuote(part)).join(' ')}`)
  }

  /** Plugins load as the service loads them; only their problems are worth a line here. */
  private pluginLog(): Logger {
    return {debug() {}, error: (message) => this.logToStderr(`Error: ${message}`), info() {}, warn: (message) => this.warn(message)}
  }
}

