/**
 * A program run in a real terminal (a tmux pane), driven by keystrokes and checked by what the screen shows,
 * for what only a terminal exercises: line editing, history, interactive prompts. Each test process has its
 * own tmux server, so parallel runs never share sessions.
 */
import {execa} from 'execa'

import {until} from './service.js'

const SOCKET = `service-test-${process.pid}`
let sessions = 0

async function tmux(...args: string[]): Promise<string> {
  try {
    return String((await execa('tmux', ['-L', SOCKET, ...args])).stdout)
  } catch (error) {
    if ((error as {code?: string}).code === 'ENOENT') throw new Error('the terminal tests drive a real terminal through tmux; install it (e.g. `apt-get install -y tmux`)')
    throw error
  }
}

const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`

export interface Terminal {
  /** The visible screen, one string per row, trailing blanks trimmed. */
  screen(): Promise<string[]>
  /** Types text as it is. */
  type(text: string): Promise<void>
  /** Presses tmux-named keys: `Enter`, `Left`, `Up`, `C-u`… */
  press(...keys: string[]): Promise<void>
  /** Waits until a row of the screen matches (the screen is in the error when it never does). */
  waitForRow(pattern: RegExp): Promise<string>
  /** Waits until the program has exited, and answers its exit code. */
  exited(): Promise<number>
  close(): Promise<void>
}

/**
 * Starts `command` in a 100×30 terminal with `env` added to the environment. When it exits, the shell around
 * it prints `[exited <code>]` and keeps the pane (and its screen) until `close`.
 */
export async function startTerminal(command: string[], env: Record<string, string> = {}): Promise<Terminal> {
  const session = `t${++sessions}`
  const program = ['env', ...Object.entries({NO_COLOR: '1', ...env}).map(([name, value]) => `${name}=${value}`), ...command].map(quote).join(' ')
  await tmux('new-session', '-d', '-s', session, '-x', '100', '-y', '30', `${program}; echo "[exited $?]"; exec sleep 600`)
  const screen = async () => (await tmux('capture-pane', '-p', '-t', session)).split('\n').map((row) => row.trimEnd())
  return {
    async close() {
      await tmux('kill-session', '-t', session).catch(() => undefined)
    },
    async exited() {
      const row = await until(async () => (await screen()).find((row) => /^\[exited \d+\]$/.test(row)), `${command.join(' ')} to exit`)
      return Number(row.slice(8, -1))
    },
    async press(...keys) {
      await tmux('send-keys', '-t', session, ...keys)
    },
    screen,
    async type(text) {
      await tmux('send-keys', '-t', session, '-l', text)
    },
    async waitForRow(pattern) {
      let rows: string[] = []
      try {
        return await until(async () => (rows = await screen()).find((row) => pattern.test(row)), `a row matching ${pattern}`)
      } catch {
        throw new Error(`no row of the screen matches ${pattern}:\n${rows.join('\n')}`)
      }
    },
  }
}

/** Ends this test process's tmux server, with any session a failed test left behind. */
export async function closeTerminals(): Promise<void> {
  await tmux('kill-server').catch(() => undefined)
}
