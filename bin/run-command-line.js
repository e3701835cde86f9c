// Shared by the launchers: runs oclif's command line. oclif swallows EPIPE on stdout (a reader such as `head` that
// stopped reading early), then waits for stdout to drain before it returns, which a closed pipe never does. Awaited
// at the top level, that wait left Node to end the program with "Detected unsettled top-level await" and exit code
// 13; left unawaited, the program ends once its work is done, with its own exit code.
import {execute} from '@oclif/core'

/**
 * `endOnClosedStdout`: the program ends at once, quietly, when the reader of its stdout is gone, as commands killed
 * by SIGPIPE do (Node ignores SIGPIPE): a command's work is for that reader. The service programs keep running
 * without it, since their work is serving, and their logs go to stderr.
 */
export function runCommandLine(args, dir, {endOnClosedStdout = false} = {}) {
  if (endOnClosedStdout) {
    process.stdout.on('error', (error) => {
      if (error.code === 'EPIPE') process.exit()
    })
  }

  void execute({args, dir})
}
