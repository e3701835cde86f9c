/**
 * node-llama-cpp reads a file with a wrong magic or version as "GGUF version 3" and never returns, and its
 * errors about a header quote the file's own bytes (its magic, its keys). A GGUF file is checked here first,
 * and a header it cannot read is answered with what is wrong, never with any of the file's content.
 */
import {constants} from 'node:fs'
import {open} from 'node:fs/promises'

import {requestError} from './errors.js'

/** What is wrong with a file that should be GGUF, for the person who named it in `model_uri`. */
export const notGguf = (file: string, problem = 'does not start with the GGUF magic') =>
  requestError(`${file} is not a GGUF file llama.cpp can read: it ${problem}. model_uri and the model_format ggufv2 need a GGUF file.`, 'model_uri')

/** Fails unless the file starts with a GGUF header of a version llama.cpp reads; opening it never blocks. */
export async function checkGgufHeader(path: string): Promise<void> {
  const file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    if (!(await file.stat()).isFile()) throw notGguf(path, 'is not a regular file')
    const {buffer, bytesRead} = await file.read(Buffer.alloc(8), 0, 8, 0)
    if (bytesRead < 8 || buffer.subarray(0, 4).toString('latin1') !== 'GGUF') throw notGguf(path)
    const version = buffer.readUInt32LE(4)
    if (version < 2 || version > 3) throw notGguf(path, 'is of a GGUF version llama.cpp does not read (it reads versions 2 and 3)')
  } finally {
    await file.close()
  }
}
