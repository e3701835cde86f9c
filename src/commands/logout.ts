import {isServiceErrorShape} from '../kernel/errors.js'
import {serviceHome} from '../kernel/settings.js'
import {ClientCommand} from '../cli/base-command.js'
import {forgetLogin, readLogin} from '../cli/credentials.js'

export default class Logout extends ClientCommand<typeof Logout> {
  static description =
    'Log out of a service: the service revokes the access token `servicectl login` saved for the endpoint, and the saved login is deleted. An API key cannot be logged out; an administrator removes it from the access-control config.'
  static examples = ['<%= config.bin %> logout -e http://127.0.0.1:9997']

  async run(): Promise<{endpoint: string; revoked: boolean; username?: string}> {
    const {endpoint} = this
    const home = serviceHome()
    const saved = readLogin(home, endpoint)
    if (!saved) {
      this.log(`Not logged in to ${endpoint}; nothing to do.`)
      return {endpoint, revoked: false}
    }

    try {
      await this.client().logout()
    } catch (error) {
      // A token the service no longer accepts needs no revoking; the saved login is deleted all the same.
      if (!(isServiceErrorShape(error) && error.status === 401)) throw error
      await forgetLogin(home, endpoint)
      this.log(`Logged out of ${endpoint} as ${saved.username}; the service no longer accepted that login (${error.message})`)
      return {endpoint, revoked: false, username: saved.username}
    }

    await forgetLogin(home, endpoint)
    this.log(`Logged out of ${endpoint} as ${saved.username}: the service revoked the token and the saved login is deleted.`)
    return {endpoint, revoked: true, username: saved.username}
  }
}
