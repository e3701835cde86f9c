/**
 * node-llama-cpp reads a file with a wrong magic or version as "GGUF version 3" and never returns, and its
 * errors about a header quote the file's own bytes (its magic, its keys). A GGUF file is checked here first,
 * and a header it cannot read is answered with what is wrong, never with any of the file's content.
 */
import {constants} from 'node:fs'
import {open, stat} from 'node:fs/promises'

import type {Llama} from 'node-llama-cpp'

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

/**
 * Whether a GGUF file whose load failed holds less than its header promises: its tensors' bytes, from where the
 * first one starts, would run past the end of the file. A header that cannot be read counts as damaged too.
 */
async function isCutShort(path: string, llama: Llama): Promise<boolean> {
  const {GgufInsights, readGgufFileInfo} = await import('node-llama-cpp')
  try {
    const info = await readGgufFileInfo(path, {sourceType: 'filesystem'})
    const tensors = info.fullTensorInfo ?? []
    if (tensors.length === 0) return false
    const dataStart = Math.min(...tensors.map((tensor) => Number(tensor.fileOffset)))
    const {modelSize} = await GgufInsights.from(info, llama)
    return (await stat(path)).size < dataStart + modelSize
  } catch {
    return true
  }
}

/**
 * Why llama.cpp could not load a file whose first bytes were fine. A file cut short is the caller's to fix: a 400
 * without llama.cpp's words, which quote the file's tensor names. Anything else stays the engine's failure.
 */
export async function loadFailure(path: string, error: Error, llama: Llama, llamaErrors: string[]): Promise<Error> {
  if (await isCutShort(path, llama)) return notGguf(path, 'is incomplete or damaged (its data ends before its header says it does); copy or download it again')
  const detail = llamaErrors.length > 0 ? ` (${llamaErrors.join('; ')})` : ''
  return new Error(`llama.cpp could not load ${path}: ${error.message}${detail}`)
}
