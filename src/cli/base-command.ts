import {Command, Flags, Interfaces} from '@oclif/core'
import {join} from 'node:path'

import {Client, DEFAULT_ENDPOINT} from '../client/client.js'
import {isServiceErrorShape, type ServiceErrorShape} from '../kernel/errors.js'
import {DEFAULT_PORT, serviceHome} from '../kernel/settings.js'
import {authFailureLine, type CredentialSource, readLogin} from './credentials.js'
import {checkedEndpoint} from './endpoint.js'
import {httpFetch} from './http-fetch.js'
import {adviseOnCertificates, tlsCaFlag, trustCertificateAuthority} from './tls.js'
import {JsonCommand, type JsonFailure} from './json-command.js'
import {fileHistory, type LineHistory} from './repl.js'
import {formatTable} from './table.js'

/**
 * Base of every command that talks to a running service: the global flags, the endpoint rule
 * (-e, else SERVICE_ENDPOINT, else -H/-p, else the local service), the credential (--api-key, else the login
 * `servicectl login` saved for the endpoint), `--json`, and one clear line on failure.
 */
export abstract class ClientCommand<T extends typeof Command> extends JsonCommand {
  static baseFlags = {
    'api-key': Flags.string({description: 'API key (also -ak), when access control is on.', env: 'SERVICE_API_KEY', helpGroup: 'GLOBAL'}),
    endpoint: Flags.string({char: 'e', description: `Service endpoint [default: ${DEFAULT_ENDPOINT}, or SERVICE_ENDPOINT].`, helpGroup: 'GLOBAL'}),
    host: Flags.string({char: 'H', description: 'Service host, when no endpoint is given.', helpGroup: 'GLOBAL'}),
    'log-level': Flags.option({description: 'Log level.', helpGroup: 'GLOBAL', options: ['debug', 'info', 'warn', 'error'] as const})(),
    port: Flags.integer({char: 'p', description: `Service port, when no endpoint is given [default: ${DEFAULT_PORT}].`, helpGroup: 'GLOBAL', max: 65_535, min: 1}),
    'tls-ca': tlsCaFlag({helpGroup: 'GLOBAL'}),
  }

  protected flags!: Interfaces.InferredFlags<(typeof ClientCommand)['baseFlags'] & T['flags']>
  protected args!: Interfaces.InferredArgs<T['args']>
  protected endpoint!: string
  private credentialSource: CredentialSource

  public async init(): Promise<void> {
    await super.init()
    const {args, flags} = await this.parse({
      args: this.ctor.args,
      baseFlags: (super.ctor as typeof ClientCommand).baseFlags,
      enableJsonFlag: this.ctor.enableJsonFlag,
      flags: this.ctor.flags,
      strict: this.ctor.strict,
    })
    this.flags = flags as typeof this.flags
    this.args = args as typeof this.args
    this.endpoint = this.chooseEndpoint()
    await trustCertificateAuthority(this.flags['tls-ca'])
  }

  /** The endpoint rule, applied once in `init`, so a refused endpoint fails before anything is sent. */
  private chooseEndpoint(): string {
    const {endpoint, host, port} = this.flags
    if (endpoint) return checkedEndpoint(endpoint, '--endpoint')
    if (host || port) return `http://${host ?? '127.0.0.1'}:${port ?? DEFAULT_PORT}`
    return process.env.SERVICE_ENDPOINT ? checkedEndpoint(process.env.SERVICE_ENDPOINT, 'SERVICE_ENDPOINT') : DEFAULT_ENDPOINT
  }

  /** Where a conversation (chat, generate) is shown: stdout, unless stdout is kept for `--json`. */
  protected conversationOutput(): NodeJS.WritableStream {
    return this.jsonEnabled() ? process.stderr : process.stdout
  }

  /** The typed-line history of a REPL command, kept in SERVICE_HOME/history/<command>. */
  protected replHistory(command: string): LineHistory {
    return fileHistory(join(serviceHome(), 'history', command))
  }

  protected client(): Client {
    const apiKey = this.flags['api-key']
    const saved = apiKey ? undefined : readLogin(serviceHome(), this.endpoint)
    this.credentialSource = apiKey ? {kind: 'api-key'} : saved ? {kind: 'login', username: saved.username} : undefined
    return new Client(this.endpoint, {
      apiKey: apiKey ?? saved?.access_token,
      fetch: adviseOnCertificates(httpFetch),
      onVersionMismatch: (message) => this.warn(message),
      trace: this.flags['log-level'] === 'debug' ? (line) => this.logToStderr(line) : undefined,
    })
  }

  /** Server and connection errors are one line for a person, never a stack trace. */
  protected async catch(error: Error & {exitCode?: number}): Promise<unknown> {
    if (isServiceErrorShape(error) && !('oclif' in error)) {
      const failure = this.failureOf(error)
      this.fail(failure, failure.status === 503 && failure.code === 'connection_failed' ? 3 : 1)
    }

    return super.catch(error)
  }

  /**
   * A turn of a conversation (chat, generate) that failed on a terminal, where the conversation goes on without
   * it: its line on stderr, and what `--json` reports of it. Anything but the service's error still ends the command.
   */
  protected failedTurn(error: unknown): JsonFailure {
    if (!isServiceErrorShape(error)) throw error
    const failure = this.failureOf(error)
    this.logToStderr(`Error: ${failure.message}`)
    return failure
  }

  private failureOf(error: ServiceErrorShape): JsonFailure & {code: string; status: number} {
    const message = authFailureLine(error, this.endpoint, this.credentialSource) ?? error.message
    return {code: error.code, message, status: error.status}
  }

  /** A flag's JSON text, parsed and checked to be `what`; otherwise the command stops with exit code 2. */
  protected parseJson(flag: string, text: string, check: (value: unknown) => boolean, what: string): unknown {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      this.error(`${flag} is not valid JSON; give ${what}.`, {exit: 2})
    }

    if (!check(value)) this.error(`${flag} must be ${what}.`, {exit: 2})
    return value
  }

  /** A fixed-width table; `--json` output comes from the command's return value instead. */
  protected table(headers: string[], rows: Array<Array<unknown>>): void {
    for (const line of formatTable(headers, rows)) this.log(line)
  }
}
