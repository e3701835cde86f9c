/**
 * What a failed model process or program tells the people who asked for it. Its output can hold anything the program
 * read or printed (a file's contents, the service's environment), and its messages go to the caller of a launch, to
 * every client with a request in flight and onto the model's status and events, which any key that may list models
 * reads. So a message says what happened in the service's own words, with at most a cause recognised in the output
 * by a fixed pattern (the type of a Python exception, never its text), and points to the model's log, where every line
 * of the output is kept for whoever may read the service's files.
 */

/** Python's own exception types, named when a traceback ends with one: the type says much, the text may quote anything. */
const PYTHON_EXCEPTIONS = new Set([
  'AssertionError',
  'AttributeError',
  'ConnectionError',
  'FileNotFoundError',
  'ImportError',
  'IndentationError',
  'KeyError',
  'MemoryError',
  'ModuleNotFoundError',
  'NameError',
  'NotImplementedError',
  'OSError',
  'OutOfMemoryError',
  'PermissionError',
  'RuntimeError',
  'SyntaxError',
  'TimeoutError',
  'TypeError',
  'ValueError',
])

/** How programs say their port was taken: Python (errno 98), Node, uvicorn, llama-server. */
export const PORT_TAKEN = /address already in use|EADDRINUSE|errno 98|could ?n[o']t bind/i

/** Failures of native code, recognised by a line of their output, each said in the service's words. */
const NATIVE_CAUSES: Array<[pattern: RegExp, cause: string]> = [
  [/GGML_ASSERT/, 'a llama.cpp assertion failed'],
  [/out of memory|cudaErrorMemoryAllocation|std::bad_alloc|failed to allocate/i, 'it ran out of memory'],
  [PORT_TAKEN, 'its port was taken'],
]

/** A traceback's last line: `ModuleNotFoundError: No module named 'x'`, or a qualified `torch.OutOfMemoryError: …`. */
const EXCEPTION_LINE = /^(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)(?::|$)/

/** The cause of a failure as ` (it raised ModuleNotFoundError)`, if the output's last lines show a known one; else ''. */
export function recognisedCause(lines: readonly string[]): string {
  for (const line of [...lines].reverse()) {
    const type = EXCEPTION_LINE.exec(line.trim())?.[1]
    if (type && PYTHON_EXCEPTIONS.has(type)) return ` (it raised ${type})`
    const native = NATIVE_CAUSES.find(([pattern]) => pattern.test(line))
    if (native) return ` (${native[1]})`
  }

  return ''
}

/** Where a model's output is, as the worker keeps it (worker.ts): `logs/models/<uid>.log` in the service's home. */
export const outputIsInLog = (uid: string) => `its output is in the model's log, logs/models/${uid}.log in the service's home (on its worker's machine in a cluster)`
