import {createWriteStream, mkdirSync, type WriteStream} from 'node:fs'
import {dirname} from 'node:path'

import type {Logger} from '../kernel/contracts.js'

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export interface FileLogger extends Logger {
  close(): Promise<void>
}

/** Writes `time level message` lines to stderr and, when given, appends them to the process's log file. */
export function createLogger({file, level = 'info', name}: {level?: LogLevel; file?: string; name: string}): FileLogger {
  const threshold = LOG_LEVELS.indexOf(level)
  let stream: WriteStream | undefined
  if (file) {
    mkdirSync(dirname(file), {recursive: true})
    stream = createWriteStream(file, {flags: 'a'})
  }

  const write = (at: LogLevel, message: string) => {
    if (LOG_LEVELS.indexOf(at) < threshold) return
    const line = `${new Date().toISOString()} ${at.padEnd(5)} [${name}] ${message}\n`
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
