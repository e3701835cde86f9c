/**
 * Service settings, from lowest to highest precedence: defaults, a config file found by cosmiconfig
 * (`service.config.json`, `.servicerc`, … in the working directory, else in `SERVICE_HOME`), environment
 * variables, then command-line flags (applied by the command).
 */
import {homedir} from 'node:os'
import {delimiter, dirname, join, resolve} from 'node:path'

import {ServiceError} from './errors.js'
import {ALLOWED_IMAGE_HOSTS_SETTING} from './image-inputs.js'
import {keepAliveMs as keepAliveMsOf} from './keep-alive.js'
import {ALLOWED_MODEL_DIRS_SETTING} from './model-files.js'
import {ALLOWED_PIP_SOURCES_SETTING, ALLOWED_PYTHON_MODULES_SETTING} from './reach.js'

/** The hubs weights can come from; SERVICE_MODEL_SRC names one of them. */
export const HUB_NAMES = ['huggingface', 'modelscope'] as const
export type HubName = (typeof HUB_NAMES)[number]

export interface ServiceSettings {
  home: string
  host: string
  port: number
  logLevel: 'debug' | 'info' | 'warn' | 'error'
  /** The service's and its model processes' log lines: `text` (default) or `json`; SERVICE_LOG_FORMAT, `log_format`. */
  logFormat: 'text' | 'json'
  /** Hub weights come from when a launch names none: SERVICE_MODEL_SRC. */
  modelSource: string
  /** Folders `file://` model URIs must resolve into (SERVICE_ALLOWED_MODEL_DIRS); empty: anywhere. */
  allowedModelDirs: string[]
  /** Python modules registrations may have the flexible launcher import (SERVICE_ALLOWED_PYTHON_MODULES); empty: admins decide. */
  allowedPythonModules: string[]
  /** Package indexes, URLs and folders virtual environments may install from beyond plain names (SERVICE_ALLOWED_PIP_SOURCES); empty: admins decide. */
  allowedPipSources: string[]
  /** Hosts whose pictures chat requests may have fetched at loopback, link-local or private addresses (SERVICE_ALLOWED_IMAGE_HOSTS, `allowed_image_hosts`); empty: none. */
  allowedImageHosts: string[]
  /** Registrations each user without `admin` may have (SERVICE_MAX_REGISTRATIONS_PER_USER, `max_registrations_per_user`). */
  maxRegistrationsPerUser: number
  /** Relaunch the models that were running when the service last stopped (SERVICE_RESTORE_MODELS, `restore_models`); default on. */
  restoreModels: boolean
  /** Launch a known model that is not running when a request names it (SERVICE_LOAD_ON_DEMAND, `load_on_demand`); default off. */
  loadOnDemand: boolean
  /** Seconds a request waits for its model's on-demand launch before a 503 (SERVICE_ON_DEMAND_WAIT, `on_demand_wait`); default 300. */
  onDemandWaitSeconds: number
  /** How long an idle model stays loaded when neither its launch nor the request says (SERVICE_KEEP_ALIVE, `keep_alive`); default forever. */
  keepAliveMs: number
  /** Names the Host header may give besides the service's own (SERVICE_ALLOWED_HOSTS, `allowed_hosts`; see server/browser-guard.ts). */
  allowedHosts: string[]
  /** Origins of other sites whose pages may call the service (SERVICE_ALLOWED_ORIGINS, `allowed_origins`). */
  allowedOrigins: string[]
}

export const DEFAULT_PORT = 9997
export const DEFAULT_MAX_REGISTRATIONS_PER_USER = 200
export const MAX_REGISTRATIONS_SETTING = 'SERVICE_MAX_REGISTRATIONS_PER_USER'
const CONFIG_FILES = ['service.config.json', '.servicerc', '.servicerc.json', '.servicerc.yaml', '.servicerc.yml', 'service.config.js', 'service.config.mjs']
export const DEFAULT_HOST = '127.0.0.1'
export const ALLOWED_HOSTS_ENV = 'SERVICE_ALLOWED_HOSTS'
export const ALLOWED_ORIGINS_ENV = 'SERVICE_ALLOWED_ORIGINS'

/** A comma-separated setting (an environment variable, a flag, or a config file's string) as its entries; a config file's list as it is. */
export const settingList = (value: unknown, separator = ','): string[] =>
  (Array.isArray(value) ? value.map(String) : typeof value === 'string' ? value.split(separator) : []).map((entry) => entry.trim()).filter(Boolean)

export function serviceHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.SERVICE_HOME || join(homedir(), '.service'))
}

export function homePaths(home: string) {
  return {
    cache: join(home, 'cache'),
    desiredModels: join(home, 'desired-models.json'),
    /** What engines derive from model files and keep across launches (LoadContext.cacheDir), a folder per engine. */
    engineCache: join(home, 'engine-cache'),
    launchHistory: join(home, 'launch-history.json'),
    logs: join(home, 'logs'),
    plugins: join(home, 'plugins'),
    registrations: join(home, 'registrations'),
    revokedTokens: join(home, 'revoked-tokens.json'),
    /** Requests and tokens per API key and model, by the hour (server/usage-ledger.ts). */
    usage: join(home, 'usage.json'),
    /** Files uploaded to multipart routes, while their request lasts. */
    uploads: join(home, 'uploads'),
    virtualenv: join(home, 'virtualenv'),
  }
}

export async function loadSettings(env: NodeJS.ProcessEnv = process.env): Promise<ServiceSettings> {
  const home = serviceHome(env)
  const {cosmiconfig} = await import('cosmiconfig')
  const explorer = cosmiconfig('service', {searchPlaces: CONFIG_FILES, searchStrategy: 'none'})
  const found = (await explorer.search()) ?? (await explorer.search(home))
  const file = (found?.config ?? {}) as Partial<Record<'allowed_hosts' | 'allowed_image_hosts' | 'allowed_model_dirs' | 'allowed_origins' | 'allowed_pip_sources' | 'allowed_python_modules' | 'host' | 'max_registrations_per_user' | 'port' | 'log_format' | 'log_level' | 'model_src' | 'restore_models' | 'keep_alive' | 'load_on_demand' | 'on_demand_wait', unknown>>
  const level = String(env.SERVICE_LOG_LEVEL ?? file.log_level ?? 'info').toLowerCase()
  const format = String(env.SERVICE_LOG_FORMAT ?? file.log_format ?? 'text').toLowerCase()
  const modelSource = String(env.SERVICE_MODEL_SRC ?? file.model_src ?? 'huggingface')
  // A misspelt hub would otherwise quietly mean Hugging Face, and downloads would go where the operator said not to.
  if (!(HUB_NAMES as readonly string[]).includes(modelSource))
    throw new ServiceError(
      400,
      'invalid_request',
      `${env.SERVICE_MODEL_SRC === undefined ? `model_src in ${found?.filepath}` : 'SERVICE_MODEL_SRC'} is "${modelSource}", which is not a model hub; use one of: ${HUB_NAMES.join(', ')}.`,
    )
  return {
    allowedHosts: settingList(env[ALLOWED_HOSTS_ENV] ?? file.allowed_hosts),
    allowedImageHosts: settingList(env[ALLOWED_IMAGE_HOSTS_SETTING] ?? file.allowed_image_hosts),
    allowedModelDirs: allowedModelDirs(env, file.allowed_model_dirs, found ? dirname(found.filepath) : home),
    allowedOrigins: settingList(env[ALLOWED_ORIGINS_ENV] ?? file.allowed_origins),
    allowedPipSources: settingList(env[ALLOWED_PIP_SOURCES_SETTING] ?? file.allowed_pip_sources),
    allowedPythonModules: settingList(env[ALLOWED_PYTHON_MODULES_SETTING] ?? file.allowed_python_modules),
    home,
    host: String(file.host ?? DEFAULT_HOST),
    logFormat: format === 'json' ? 'json' : 'text',
    logLevel: (['debug', 'info', 'warn', 'error'].includes(level) ? level : 'info') as ServiceSettings['logLevel'],
    maxRegistrationsPerUser: registrationQuota(env[MAX_REGISTRATIONS_SETTING] ?? file.max_registrations_per_user),
    modelSource,
    port: Number(file.port ?? DEFAULT_PORT),
    restoreModels: !['0', 'false', 'no', 'off'].includes(String(env.SERVICE_RESTORE_MODELS ?? file.restore_models ?? 'true').toLowerCase()),
    ...onDemandSettings(env, file),
  }
}

/**
 * The environment's list is separated like PATH and relative to the working directory; the config file's is a
 * list (or one such string) relative to the file's own folder.
 */
function allowedModelDirs(env: NodeJS.ProcessEnv, fromFile: unknown, fileFolder: string): string[] {
  const fromEnv = env[ALLOWED_MODEL_DIRS_SETTING]
  if (fromEnv !== undefined) return fromEnv.split(delimiter).filter(Boolean).map((folder) => resolve(folder))
  const listed = Array.isArray(fromFile) ? fromFile.map(String) : typeof fromFile === 'string' ? fromFile.split(delimiter) : []
  return listed.filter(Boolean).map((folder) => resolve(fileFolder, folder))
}

/** A quota that is not a whole number of at least 0 would be read as none, so it stops the service instead. */
function registrationQuota(value: unknown): number {
  if (value === undefined || value === '') return DEFAULT_MAX_REGISTRATIONS_PER_USER
  const quota = Number(value)
  if (!Number.isInteger(quota) || quota < 0) throw new Error(`${MAX_REGISTRATIONS_SETTING} (or max_registrations_per_user) must be a whole number, 0 or more; it is ${JSON.stringify(value)}.`)
  return quota
}

/** On-demand launches and idle unloading (src/cluster/on-demand.ts); a value that cannot be read stops the service, saying which. */
function onDemandSettings(env: NodeJS.ProcessEnv, file: Record<string, unknown>): Pick<ServiceSettings, 'keepAliveMs' | 'loadOnDemand' | 'onDemandWaitSeconds'> {
  const keepAlive = env.SERVICE_KEEP_ALIVE ?? file.keep_alive
  const keepAliveMs = keepAlive === undefined || keepAlive === '' ? Number.POSITIVE_INFINITY : keepAliveMsOf(String(keepAlive))
  if (keepAliveMs === undefined) throw new Error(`SERVICE_KEEP_ALIVE (or keep_alive) must be a duration such as "5m" or "1h", a number of seconds, or -1 for forever; it is ${JSON.stringify(keepAlive)}.`)
  const wait = env.SERVICE_ON_DEMAND_WAIT ?? file.on_demand_wait
  const onDemandWaitSeconds = wait === undefined || wait === '' ? 300 : Number(wait)
  if (!Number.isFinite(onDemandWaitSeconds) || onDemandWaitSeconds < 0 || onDemandWaitSeconds > 86_400)
    throw new Error(`SERVICE_ON_DEMAND_WAIT (or on_demand_wait) must be a number of seconds from 0 to 86400; it is ${JSON.stringify(wait)}.`)
  const loadOnDemand = ['1', 'true', 'yes', 'on'].includes(String(env.SERVICE_LOAD_ON_DEMAND ?? file.load_on_demand ?? 'false').toLowerCase())
  return {keepAliveMs, loadOnDemand, onDemandWaitSeconds}
}
