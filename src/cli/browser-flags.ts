import {Flags} from '@oclif/core'

import {ALLOWED_HOSTS_ENV, ALLOWED_ORIGINS_ENV, type ServiceSettings, settingList} from '../kernel/settings.js'

/**
 * `--allowed-hosts` and `--allowed-origins` of the commands that run a service (see src/server/browser-guard.ts);
 * each overrides its environment variable and the config file's entry.
 */
export const browserFlags = () => ({
  'allowed-hosts': Flags.string({
    description: `More names the service answers to in the Host header, comma-separated: a proxy's or a Service's name, *.example.com for a domain and its subdomains, or * for any (also ${ALLOWED_HOSTS_ENV}) [default: loopback names, IP addresses, this machine's name and --host].`,
  }),
  'allowed-origins': Flags.string({
    description: `Origins of other sites whose web pages may call the API, comma-separated: https://chat.example.com, http://localhost:*, or * for any (also ${ALLOWED_ORIGINS_ENV}) [default: none but the service's own].`,
  }),
})

/** The settings with the flags given applied over them. */
export const withBrowserFlags = (settings: ServiceSettings, flags: {'allowed-hosts'?: string; 'allowed-origins'?: string}): ServiceSettings => ({
  ...settings,
  allowedHosts: flags['allowed-hosts'] === undefined ? settings.allowedHosts : settingList(flags['allowed-hosts']),
  allowedOrigins: flags['allowed-origins'] === undefined ? settings.allowedOrigins : settingList(flags['allowed-origins']),
})
