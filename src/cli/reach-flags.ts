import {Flags} from '@oclif/core'
import {delimiter, resolve} from 'node:path'

import type {ServiceSettings} from '../kernel/settings.js'

import {ALLOWED_IMAGE_HOSTS_SETTING} from '../kernel/image-inputs.js'
import {ALLOWED_MODEL_DIRS_SETTING} from '../kernel/model-files.js'
import {ALLOWED_PIP_SOURCES_SETTING, ALLOWED_PYTHON_MODULES_SETTING} from '../kernel/reach.js'
import {DEFAULT_MAX_REGISTRATIONS_PER_USER, MAX_REGISTRATIONS_SETTING, settingList} from '../kernel/settings.js'

/**
 * The operator's bounds on what registrations and launches may make the service run or read (src/kernel/reach.ts), for
 * the programs that take registrations and launches (service-local, service-supervisor); each overrides its setting.
 */
export const reachFlags = () => ({
  'allowed-image-hosts': Flags.string({
    description: `Comma-separated hosts whose pictures chat requests may have the service fetch although they are at loopback, link-local or private addresses (also ${ALLOWED_IMAGE_HOSTS_SETTING}) [default: none].`,
  }),
  'allowed-model-dirs': Flags.string({
    description: `Folders, separated by "${delimiter}" as in ${ALLOWED_MODEL_DIRS_SETTING}, that model files and the files launch parameters name must be in [default: anywhere, for admins only].`,
  }),
  'allowed-pip-sources': Flags.string({
    description: `Comma-separated package indexes, URLs and folders virtual environments may install from beyond plain requirements (also ${ALLOWED_PIP_SOURCES_SETTING}) [default: any, for admins only].`,
  }),
  'allowed-python-modules': Flags.string({
    description: `Comma-separated Python modules flexible models may have the launcher import (also ${ALLOWED_PYTHON_MODULES_SETTING}) [default: any, for admins only].`,
  }),
  'max-registrations-per-user': Flags.integer({
    description: `Registrations each user without admin may hold (also ${MAX_REGISTRATIONS_SETTING}) [default: ${DEFAULT_MAX_REGISTRATIONS_PER_USER}].`,
    min: 0,
  }),
})

type ReachFlagValues = {'allowed-image-hosts'?: string; 'allowed-model-dirs'?: string; 'allowed-pip-sources'?: string; 'allowed-python-modules'?: string; 'max-registrations-per-user'?: number}

/** The settings with the flags given over them; folders are relative to the working folder, as the environment's are. */
export function withReachFlags<Settings extends ServiceSettings>(settings: Settings, flags: ReachFlagValues): Settings {
  return {
    ...settings,
    allowedImageHosts: flags['allowed-image-hosts'] === undefined ? settings.allowedImageHosts : settingList(flags['allowed-image-hosts']),
    allowedModelDirs: flags['allowed-model-dirs'] === undefined ? settings.allowedModelDirs : settingList(flags['allowed-model-dirs'], delimiter).map((folder) => resolve(folder)),
    allowedPipSources: flags['allowed-pip-sources'] === undefined ? settings.allowedPipSources : settingList(flags['allowed-pip-sources']),
    allowedPythonModules: flags['allowed-python-modules'] === undefined ? settings.allowedPythonModules : settingList(flags['allowed-python-modules']),
    maxRegistrationsPerUser: flags['max-registrations-per-user'] ?? settings.maxRegistrationsPerUser,
  }
}
