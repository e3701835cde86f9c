import {createInterface} from 'node:readline/promises'

/**
 * A line-by-line conversation on stdin/stdout: `ask` is called for each non-empty line and writes its own
 * answer; an empty line, end of input or Ctrl-C ends it. Works the same when lines are piped in.
 */
export async function runRepl(prompt: string, ask: (line: string, signal: AbortSignal) => Promise<void>): Promise<void> {
  const readline = createInterface({input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY ?? false})
  const lines = readline[Symbol.asyncIterator]()
  let current: AbortController | undefined
  readline.on('SIGINT', () => (current ? current.abort() : readline.close()))
  try {
    while (true) {
      if (process.stdin.isTTY) process.stdout.write(prompt)
      const next = await lines.next()
      if (next.done || next.value.trim() === '') break
      current = new AbortController()
      try {
        await ask(next.value, current.signal)
      } catch (error) {
        if ((error as Error).name !== 'AbortError') throw error
        process.stdout.write('\n(stopped)\n')
      } finally {
        current = undefined
      }
    }
  } finally {
    readline.close()
  }
}
