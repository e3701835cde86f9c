/**
 * Service settings, from lowest to highest precedence: defaults, a config file found by cosmiconfig
 * (`service.config.json`, `.servicerc`, … in the working directory, else in `SERVICE_HOME`), environment
 * variables, then command-line flags (applied by the command).
 */
import {homedir} from 'node:os'
import {delimiter, dirname, join, resolve} from 'node:path'

import {ALLOWED_MODEL_DIRS_SETTING} from './model-files.js'

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
  /** Relaunch the models that were running when the service last stopped (SERVICE_RESTORE_MODELS, `restore_models`); default on. */
  restoreModels: boolean
}

export const DEFAULT_PORT = 9997
const CONFIG_FILES = ['service.config.json', '.servicerc', '.servicerc.json', '.servicerc.yaml', '.servicerc.yml', 'service.config.js', 'service.config.mjs']
export const DEFAULT_HOST = '127.0.0.1'

export function serviceHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.SERVICE_HOME || join(homedir(), '.service'))
}

export function homePaths(home: string) {
  return {
    cache: join(home, 'cache'),
    desiredModels: join(home, 'desired-models.json'),
    launchHistory: join(home, 'launch-history.json'),
    logs: join(home, 'logs'),
    plugins: join(home, 'plugins'),
    registrations: join(home, 'registrations'),
    revokedTokens: join(home, 'revoked-tokens.json'),
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
  const file = (found?.config ?? {}) as Partial<Record<'allowed_model_dirs' | 'host' | 'port' | 'log_format' | 'log_level' | 'model_src' | 'restore_models', unknown>>
  const level = String(env.SERVICE_LOG_LEVEL ?? file.log_level ?? 'info').toLowerCase()
  const format = String(env.SERVICE_LOG_FORMAT ?? file.log_format ?? 'text').toLowerCase()
  return {
    allowedModelDirs: allowedModelDirs(env, file.allowed_model_dirs, found ? dirname(found.filepath) : home),
    home,
    host: String(file.host ?? DEFAULT_HOST),
    logFormat: format === 'json' ? 'json' : 'text',
    logLevel: (['debug', 'info', 'warn', 'error'].includes(level) ? level : 'info') as ServiceSettings['logLevel'],
    modelSource: String(env.SERVICE_MODEL_SRC ?? file.model_src ?? 'huggingface'),
    port: Number(file.port ?? DEFAULT_PORT),
    restoreModels: !['0', 'false', 'no', 'off'].includes(String(env.SERVICE_RESTORE_MODELS ?? file.restore_models ?? 'true').toLowerCase()),
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
