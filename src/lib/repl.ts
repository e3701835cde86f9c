import {createInterface} from 'node:readline/promises'

import {ServiceError} from '../kernel/errors.js'

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
