import {chmodSync, createWriteStream, fchmodSync, mkdirSync, openSync, type WriteStream} from 'node:fs'
import {dirname} from 'node:path'

import type {Logger} from '../kernel/contracts.js'

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

/** Appends to a log file only the user running the service can read, in a folder only they can list. */
export function openPrivateLogFile(file: string): WriteStream {
  createPrivateFolder(dirname(file))
  const fd = openSync(file, 'a', 0o600)
  // An existing file, say from an earlier version, keeps its mode through open.
  fchmodSync(fd, 0o600)
  return createWriteStream('', {fd})
}

/** Writes `time level message` lines to stderr and, when given, appends them to the process's log file. */
export function createLogger({file, level = 'info', name}: {level?: LogLevel; file?: string; name: string}): FileLogger {
  const threshold = LOG_LEVELS.indexOf(level)
  const stream = file ? openPrivateLogFile(file) : undefined

  const write = (at: LogLevel, message: string) => {
    if (LOG_LEVELS.indexOf(at) < threshold) return
    const line = `${new Date().toISOString()} ${at.padEnd(5)} [${name}] ${escapeControlCharacters(message)}\n`
    process.stderr.write(line)
    stream?.write(line)
  }

  return {
    close: () => new Promise((resolve) => (stream ? stream.end(resolve) : resolve())),
    debug: (m) => write('debug', m),
    error: (m) => write('error', m),
    info: (m) => write('info', m),
    warn: (m) => write('warn', m),
  }
}
