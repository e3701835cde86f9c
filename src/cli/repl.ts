import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {dirname} from 'node:path'
import {createInterface} from 'node:readline/promises'

import {ServiceError} from '../kernel/errors.js'

/** Lines typed in earlier sessions, kept as long as a shell's history. */
const HISTORY_SIZE = 1000

/** Where a REPL's typed lines are kept between sessions; `load` answers them oldest first. */
export interface LineHistory {
  load(): string[]
  save(lines: string[]): void
}

/**
 * A history file, one line per entry, oldest first; private to the user (typed prompts may be confidential),
 * as the shell's own history is.
 */
export function fileHistory(path: string): LineHistory {
  return {
    load() {
      try {
        return readFileSync(path, 'utf8').split('\n').filter(Boolean).slice(-HISTORY_SIZE)
      } catch {
        return []
      }
    },
    save(lines) {
      mkdirSync(dirname(path), {mode: 0o700, recursive: true})
      writeFileSync(path, lines.map((line) => `${line}\n`).join(''), {mode: 0o600})
    },
  }
}

export interface ReplOptions {
  prompt: string
  /** Receives the prompt, the echo of typed lines and the answers (stderr when stdout is kept for `--json`). */
  output: NodeJS.WritableStream
  /** Up-arrow history across sessions, on a terminal. */
  history?: LineHistory
  /**
   * Told of a turn that failed on a terminal, where the conversation goes on without it, as Ollama's does. Piped
   * lines end at the first failure, which the command exits with: a script's later lines may rest on that answer.
   */
  onFailedTurn?: (error: unknown, line: string) => void
}

/**
 * A line-by-line conversation on stdin: `ask` is called for each non-empty line and writes its own answer to
 * `output`; an empty line, end of input or Ctrl-C ends it. Works the same when lines are piped in, but for a
 * failed turn (`onFailedTurn`). On a terminal, readline draws the prompt itself (so it redraws it when the line is
 * edited) and keeps the history.
 */
export async function runRepl({history, onFailedTurn, output, prompt}: ReplOptions, ask: (line: string, signal: AbortSignal) => Promise<void>): Promise<void> {
  const terminal = process.stdin.isTTY ?? false
  const readline = createInterface({
    history: terminal && history ? history.load().reverse() : [],
    historySize: HISTORY_SIZE,
    input: process.stdin,
    output,
    prompt,
    removeHistoryDuplicates: true,
    terminal,
  })
  // readline's history is newest first.
  if (terminal && history) readline.on('history', (lines: string[]) => history.save([...lines].reverse()))
  const lines = readline[Symbol.asyncIterator]()
  let current: AbortController | undefined
  readline.on('SIGINT', () => (current ? current.abort() : readline.close()))
  try {
    while (true) {
      if (terminal) readline.prompt()
      const next = await lines.next()
      if (next.done || next.value.trim() === '') break
      const asking = new AbortController()
      current = asking
      try {
        await ask(next.value, asking.signal)
      } catch (error) {
        // Stopped however the request ends on it: an AbortError before the answer's head, a reset stream after it.
        if (asking.signal.aborted) output.write('(stopped)\n')
        else if (terminal && onFailedTurn) onFailedTurn(error, next.value)
        else throw error
      } finally {
        current = undefined
      }
    }
  } finally {
    readline.close()
  }
}

/** One answer of a conversation, written after its label (`Assistant: `) as its text comes. */
export interface LabelledAnswer {
  write(text: string): void
  /** The answer is complete: its line ends (an empty answer shows its label alone). */
  end(): void
  /** The answer failed or was stopped: its line ends if it started, so that what follows is a line of its own. */
  abandon(): void
}

/**
 * The label is written with the answer's first text, not before the request: a turn that fails before its
 * answer starts leaves no label without an answer behind it.
 */
export function labelledAnswer(output: NodeJS.WritableStream, label: string): LabelledAnswer {
  let started = false
  const start = () => {
    if (!started) output.write(label)
    started = true
  }

  return {
    abandon() {
      if (started) output.write('\n')
    },
    end() {
      start()
      output.write('\n')
    },
    write(text) {
      if (!text) return
      start()
      output.write(text)
    },
  }
}

/** A secret typed at the terminal with echo off; Enter ends it, Ctrl-C cancels. */
export async function promptSecret(prompt: string): Promise<string> {
  const {stderr, stdin} = process
  stderr.write(prompt)
  stdin.setRawMode(true)
  stdin.setEncoding('utf8')
  stdin.resume()
  return new Promise((resolve, reject) => {
    let secret = ''
    const finish = () => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      stderr.write('\n')
    }

    const onData = (chunk: string) => {
      for (const character of chunk) {
        if (character === '\r' || character === '\n') {
          finish()
          resolve(secret)
          return
        }

        if (character === '\u0003') {
          finish()
          reject(new ServiceError(499, 'request_aborted', 'cancelled.'))
          return
        }

        secret = character === '\u007f' || character === '\b' ? secret.slice(0, -1) : secret + character
      }
    }

    stdin.on('data', onData)
  })
}

/** All of standard input up to the first line break, for secrets piped in (`--password-stdin`). */
export async function readFirstLine(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0]
}
