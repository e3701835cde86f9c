import {Command, Errors, ux} from '@oclif/core'
import {stripVTControlCharacters} from 'node:util'

import type {ErrorCode} from '../kernel/errors.js'

/** What `--json` prints on stdout, under `error`, when a command fails: a stable code for scripts and the message a person reads. */
export interface JsonFailure {
  code?: string
  message: string
  [field: string]: unknown
}

/**
 * A command stopped at the person's word: a launch cancelled with Ctrl-C, a confirmation answered no. No error of
 * the service, but no success for a script either: it exits non-zero and, with `--json`, says which it was.
 */
export class CommandStopped extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly exitCode: number,
  ) {
    super(message)
  }
}

/**
 * oclif's usage errors as one line: "The following error occurred:\n  Missing required flag model-uid\nSee more
 * help with --help" becomes "Missing required flag model-uid", and missing arguments are named without the
 * table of their descriptions.
 */
export function usageErrorLine({args, message}: Error & {args?: Array<{name?: string}>}): string {
  const missing = /^Missing \d+ required args?/.exec(message)
  if (missing && args) return `${missing[0]}: ${args.map(({name}) => name).join(', ')}`
  return stripVTControlCharacters(message)
    .replace(/\n\s*See more help with --help\s*$/, '')
    .replace(/^The following errors? occurred:\s*\n/, '')
    .replace(/^(Parsing --\S+)\s*\n\s*/m, '$1: ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .join('; ')
}

/**
 * Base of the commands with `--json`: stdout then holds the JSON alone, the command's result or, when it fails,
 * `{"error": {"code", "message"}}`. stderr stays a person's with `--json` as without: progress, what a question is
 * about, and one line saying what failed.
 */
export abstract class JsonCommand extends Command {
  static enableJsonFlag = true
  /** What the command had done when it failed, printed beside the error with `--json`: a chat's turns before the failed one. */
  protected partialResult?: Record<string, unknown>

  /** oclif's is silent under `--json`, which hid what a confirmation asks about and why a command stopped; stderr never carries the JSON. */
  logToStderr(message = '', ...args: string[]): void {
    ux.stderr(message, ...args)
  }

  warn(input: string | Error): string | Error {
    Errors.warn(input)
    return input
  }

  /**
   * With `--json`, oclif would print every enumerable property of the error (a parse error's holds the whole
   * command configuration, 300 KB), and `{"code": "EEXIT"}` for a command's own exit.
   */
  protected async catch(error: Error & {exitCode?: number}): Promise<unknown> {
    if (error instanceof Errors.ExitError) throw error
    if (error instanceof CommandStopped) this.fail({code: error.code, message: error.message}, error.exitCode, error.message)
    if (!this.jsonEnabled()) return super.catch(error)
    const exit = (error as Errors.CLIError).oclif?.exit
    if (exit === undefined) this.fail({code: 'internal_error', message: error.message}, 1)
    const usage = 'parse' in error || exit === 2
    this.fail({code: usage ? 'invalid_arguments' : 'invalid_request', message: usageErrorLine(error)}, exit)
  }

  /** One line on stderr (`Error: …` unless given), the JSON error on stdout with `--json`, and the exit code. */
  protected fail(failure: JsonFailure, exitCode: number, line = `Error: ${failure.message}`): never {
    this.logToStderr(line)
    if (this.jsonEnabled()) this.logJson({...this.partialResult, error: failure})
    this.exit(exitCode)
  }
}
