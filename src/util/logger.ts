import {chmodSync, closeSync, fchmodSync, mkdirSync, openSync, writeSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname} from 'node:path'

import type {LogFields, Logger} from '../kernel/contracts.js'

import {currentRequestId} from '../kernel/request-context.js'

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export interface FileLogger extends Logger {
  close(): Promise<void>
}

/** C0 and C1 control characters, DEL, and Unicode's line and paragraph separators. */
const CONTROL_CHARACTERS = /[\u0000-\u001F\u007F-\u009F\u2028\u2029]/g
const NAMED_ESCAPES: Record<string, string> = {'\n': '\\n', '\r': '\\r', '\t': '\\t'}

/**
 * Logged values come from callers (a username, a model name, a path): a newline in one would start a line
 * that looks like the service's own, and an escape sequence would drive the terminal of whoever reads the log.
 */
export function escapeControlCharacters(text: string): string {
  return text.replaceAll(CONTROL_CHARACTERS, (character) => {
    const code = character.codePointAt(0)!
    return NAMED_ESCAPES[character] ?? (code > 0xff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\x${code.toString(16).padStart(2, '0')}`)
  })
}

/** A folder, and any missing above it, only the user running the service can list: logs quote model names and request details. */
export function createPrivateFolder(folder: string): void {
  mkdirSync(folder, {mode: 0o700, recursive: true})
  // An existing folder, say from an earlier version, keeps its mode through mkdir.
  chmodSync(folder, 0o700)
}

/** A log file that lines are appended to. */
export interface LogFile {
  write(text: string): void
  /** Closes the file; later lines are dropped. */
  end(done?: () => void): void
}

/**
 * Appends to a log file only the user running the service can read, in a folder only they can list. Each line is
 * written at once, synchronously, as Node writes stderr to a file or a pipe: an append lands in the page cache, where
 * a write stream would hand every line to a thread of libuv's pool and back, two thread wake-ups a line (a line a
 * request, and a line for each of a model's). A file that cannot be written (a full disk) loses its lines, said once
 * on stderr, and never fails the caller.
 */
export function openPrivateLogFile(file: string): LogFile {
  createPrivateFolder(dirname(file))
  let fd: number | undefined = openSync(file, 'a', 0o600)
  // An existing file, say from an earlier version, keeps its mode through open.
  fchmodSync(fd, 0o600)
  let failed = false
  return {
    end(done) {
      if (fd !== undefined) closeSync(fd)
      fd = undefined
      done?.()
    },
    write(text) {
      if (fd === undefined || failed) return
      try {
        writeSync(fd, text)
      } catch (error) {
        failed = true
        process.stderr.write(`${new Date().toISOString()} error [log] cannot write ${file} (${(error as Error).message}); its lines go no further until the service restarts\n`)
      }
    },
  }
}

/** Line-oriented text for people and `grep`, or one JSON object per line for log collectors. */
export const LOG_FORMATS = ['text', 'json'] as const
export type LogFormat = (typeof LOG_FORMATS)[number]

export interface LoggerOptions {
  name: string
  level?: LogLevel
  format?: LogFormat
  /** Where lines are appended besides stderr. */
  file?: string
}

type LineWriter = (level: LogLevel, message: string, fields: LogFields) => string

/** The fields a line carries: those given, escaped, and the id of the request it is about, if any. */
function lineFields(fields: LogFields = {}): Record<string, boolean | number | string> {
  const requestId = currentRequestId()
  const all: LogFields = requestId === undefined || 'request_id' in fields ? fields : {...fields, request_id: requestId}
  return Object.fromEntries(
    Object.entries(all)
      .filter((entry): entry is [string, boolean | number | string] => entry[1] !== undefined)
      .map(([key, value]) => [key, typeof value === 'string' ? escapeControlCharacters(value) : value]),
  )
}

/** `time level [name] message key=value…`, as the service has always written. */
const textLine =
  (name: string): LineWriter =>
  (level, message, fields) =>
    `${new Date().toISOString()} ${level.padEnd(5)} [${name}] ${escapeControlCharacters(message)}${Object.entries(fields)
      .map(([key, value]) => ` ${key}=${value}`)
      .join('')}\n`

/**
 * `{"level":"info","time":"…","name":"…","msg":"…",…fields}` written by pino, the structured logger most Node
 * services use: its line format is what log collectors and `pino-pretty` already read. It is loaded only when
 * JSON is asked for, so the default text log costs nothing more than before.
 */
function jsonLine(name: string, level: LogLevel): LineWriter {
  const {pino} = createRequire(import.meta.url)('pino') as typeof import('pino')
  let line = ''
  const logger = pino(
    {base: {name}, formatters: {level: (label) => ({level: label})}, level, timestamp: pino.stdTimeFunctions.isoTime},
    {write: (written: string) => void (line = written)},
  )
  return (at, message, fields) => {
    logger[at](fields, escapeControlCharacters(message))
    return line
  }
}

/** One log line, as text or JSON, with its fields escaped and the current request's id: what every logger writes. */
export function logLineFormat(name: string, format: LogFormat = 'text', level: LogLevel = 'info'): (at: LogLevel, message: string, fields?: LogFields) => string {
  const line = format === 'json' ? jsonLine(name, level) : textLine(name)
  return (at, message, fields) => line(at, message, lineFields(fields))
}

/** Writes one line per entry, as text or JSON, to stderr and, when given, appends it to the process's log file. */
export function createLogger({file, format = 'text', level = 'info', name}: LoggerOptions): FileLogger {
  const threshold = LOG_LEVELS.indexOf(level)
  const logFile = file ? openPrivateLogFile(file) : undefined
  const line = logLineFormat(name, format, level)

  const write = (at: LogLevel, message: string, fields?: LogFields) => {
    if (LOG_LEVELS.indexOf(at) < threshold) return
    const written = line(at, message, fields)
    process.stderr.write(written)
    logFile?.write(written)
  }

  return {
    close: () => new Promise((resolve) => (logFile ? logFile.end(resolve) : resolve())),
    debug: (m, fields) => write('debug', m, fields),
    error: (m, fields) => write('error', m, fields),
    info: (m, fields) => write('info', m, fields),
    warn: (m, fields) => write('warn', m, fields),
  }
}
