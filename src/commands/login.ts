import {Flags} from '@oclif/core'

import {isServiceErrorShape, ServiceError} from '../kernel/errors.js'
import {serviceHome} from '../kernel/settings.js'
import {ClientCommand} from '../cli/base-command.js'
import {saveLogin} from '../cli/credentials.js'
import {promptSecret, readFirstLine} from '../cli/repl.js'

export default class Login extends ClientCommand<typeof Login> {
  static description =
    'Log in to a service that has access control on. The access token is saved for the endpoint (readable only by you, under SERVICE_HOME/auth/) and later commands to that endpoint use it until it expires.'
  static examples = [
    '<%= config.bin %> login -e http://127.0.0.1:9997 --username alice',
    'printf %s "$PASSWORD" | <%= config.bin %> login --username alice --password-stdin',
  ]
  static flags = {
    password: Flags.string({description: 'Password. Asked for without echo when omitted; prefer that or --password-stdin, which keep it out of shell history.', exclusive: ['password-stdin']}),
    'password-stdin': Flags.boolean({description: 'Read the password from standard input.'}),
    username: Flags.string({description: 'User name from the access-control config.', required: true}),
  }

  async run(): Promise<{endpoint: string; expires_at?: string; saved_to?: string; username: string; auth: boolean}> {
    const {endpoint, flags} = this
    const password = flags.password ?? (flags['password-stdin'] ? await readFirstLine() : await this.askPassword())
    let token
    try {
      token = await this.client().login(flags.username, password)
    } catch (error) {
      if (isServiceErrorShape(error) && error.code === 'auth_disabled') {
        this.log(`Access control is off at ${endpoint}; every command works without logging in.`)
        return {auth: false, endpoint, username: flags.username}
      }

      if (isServiceErrorShape(error) && error.code === 'login_failed') throw new ServiceError(401, 'login_failed', `cannot log in to ${endpoint}: ${error.message}`)
      throw error
    }

    const expiresAt = new Date(Date.now() + token.expires_in * 1000).toISOString()
    const file = await saveLogin(serviceHome(), {access_token: token.access_token, endpoint, expires_at: expiresAt, username: flags.username})
    this.log(`Logged in to ${endpoint} as ${flags.username} until ${expiresAt}; commands to this endpoint now use the login saved in ${file}.`)
    return {auth: true, endpoint, expires_at: expiresAt, saved_to: file, username: flags.username}
  }

  private async askPassword(): Promise<string> {
    if (!process.stdin.isTTY) throw new ServiceError(400, 'invalid_request', 'give the password with --password, or pipe it in with --password-stdin.')
    return promptSecret('Password: ')
  }
}
