import {createInterface} from 'node:readline/promises'

/**
 * Asks a yes/no question on stderr and reads the answer from stdin, typed or piped; anything but "y" or
 * "yes" (including the end of input, or Ctrl-C at the prompt) is a no, unless `interruptMeansYes`.
 */
export async function confirm(question: string, {interruptMeansYes = false, signal}: {interruptMeansYes?: boolean; signal?: AbortSignal} = {}): Promise<boolean> {
  const readline = createInterface({input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY ?? false})
  try {
    const answer = await new Promise<string>((resolve) => {
      readline.once('SIGINT', () => resolve(interruptMeansYes ? 'y' : 'n'))
      readline.once('close', () => resolve(''))
      readline.question(question, {signal}).then(resolve, () => resolve(''))
    })
    return /^y(es)?$/i.test(answer.trim())
  } finally {
    readline.close()
  }
}
