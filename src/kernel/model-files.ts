/**
 * What a `file://` model_uri may point at. A registration names a path on the service's machine, so a caller
 * with only `models:register` could otherwise probe it: every path that cannot be used (missing, unreadable,
 * a pipe, device, socket or kernel pseudo-file, a folder or a file without the GGUF magic where a GGUF file
 * is needed) gets one and the same answer, which never quotes the file's content. Symlinks are judged by what
 * they resolve to. A pipe is never opened in a way that blocks: its type is read with stat, and the file is
 * opened non-blocking and checked again on its descriptor, so a path swapped after the stat is caught too.
 */
import {constants} from 'node:fs'
import {open, realpath, stat} from 'node:fs/promises'
import {isAbsolute, relative, resolve, sep} from 'node:path'
import {fileURLToPath} from 'node:url'

import {badRequest} from './errors.js'

/** The operator's setting that confines `file://` URIs to some folders (also `allowed_model_dirs` in the config file). */
export const ALLOWED_MODEL_DIRS_SETTING = 'SERVICE_ALLOWED_MODEL_DIRS'

/** Kernel pseudo-filesystems: their files are never weights, and some of them hold secrets (`/proc/self/environ`). */
const PSEUDO_ROOTS = ['/proc', '/sys', '/dev']
const GGUF_MAGIC = Buffer.from('GGUF', 'latin1')

export interface ModelUriCheck {
  /** The spec's model_format: GGUF formats need a GGUF file, others a regular file or a folder. */
  format: string
  /** The field the URI came from, named in the error (e.g. `model_specs[0].model_uri`). */
  param: string
  /** Folders the URI must resolve into; empty: anywhere. */
  allowedDirs?: readonly string[]
}

export const isGgufFormat = (format: string) => format.toLowerCase().startsWith('gguf')

const inside = (path: string, folder: string) => {
  const rest = relative(folder, path)
  return rest === '' || (rest !== '..' && !rest.startsWith(`..${sep}`) && !isAbsolute(rest))
}

/**
 * Checks a `file://` model_uri and answers the real path it resolves to, which is what should be read: a
 * symlink re-pointed later does not change what was checked.
 */
export async function checkModelUri(uri: string, {allowedDirs = [], format, param}: ModelUriCheck): Promise<string> {
  if (!uri.startsWith('file://')) throw badRequest(`${param} must be a file:// URI of a file on this machine, such as file:///models/model.gguf.`, param)
  let path: string
  try {
    path = fileURLToPath(uri)
  } catch {
    throw badRequest(`${param} is not a valid file:// URI; give an absolute path, such as file:///models/model.gguf.`, param)
  }

  const gguf = isGgufFormat(format)
  const unusable = () =>
    badRequest(
      `${param} (${uri}) cannot be used: it must be an existing, readable ${gguf ? `GGUF file (model_format ${format})` : 'regular file or folder'} on the service's machine, not a pipe, device, socket or kernel pseudo-file.`,
      param,
    )
  const real = await confinedRealPath(path, {allowedDirs, param, shown: uri, what: 'the model'})
  if (!real || PSEUDO_ROOTS.some((root) => inside(real, root))) throw unusable()
  const info = await stat(real).catch(() => undefined)
  if (info?.isDirectory() && !gguf) return real
  // Pseudo-files elsewhere report a size of 0, and no weights are empty.
  if (!info?.isFile() || info.size === 0) throw unusable()
  if (gguf && !(await startsWithGgufMagic(real))) throw unusable()
  return real
}

/**
 * The real path `path` resolves to (undefined when nothing is there), or a 400 when it is outside `allowedDirs`.
 * Outside the allowed folders nothing is even looked at, so the answer says nothing about the path.
 */
async function confinedRealPath(
  path: string,
  {allowedDirs: namedDirs, ownDirs = [], param, shown, what}: {allowedDirs: readonly string[]; ownDirs?: readonly string[]; param: string; shown: string; what: string},
) {
  // The service's own folders pass where the setting names any, but the answer names only the setting's.
  const allowedDirs = namedDirs.length > 0 ? [...namedDirs, ...ownDirs] : namedDirs
  const outside = () =>
    badRequest(
      `${param} (${shown}) is outside the folders ${ALLOWED_MODEL_DIRS_SETTING} allows (${namedDirs.join(', ')}); put ${what} there, or ask the operator to add its folder.`,
      param,
    )
  if (allowedDirs.length > 0 && !allowedDirs.some((folder) => inside(resolve(path), folder))) throw outside()
  const real = await realpath(path).catch(() => undefined)
  if (real && allowedDirs.length > 0) {
    const realDirs = await Promise.all(allowedDirs.map((folder) => realpath(folder).catch(() => folder)))
    if (!realDirs.some((folder) => inside(real, folder))) throw outside()
  }

  return real
}

export interface LocalPathCheck {
  /** The launch parameter that names the path, named in the error (e.g. `vae`). */
  param: string
  /** What must be there: a regular file (default) or a folder. */
  kind?: 'file' | 'folder'
}

/**
 * Checks a launch parameter naming a file or folder on the service's machine (a VAE, a chat template, a draft
 * model) by the rule `file://` model URIs obey: absolute, existing, inside `allowedDirs` once symlinks are
 * resolved (or inside `ownDirs`, the service's own folders such as its weights cache), never a kernel pseudo-file.
 * Answers the real path, which is what the program should be given.
 */
export async function checkLocalPath(
  value: unknown,
  {allowedDirs = [], kind = 'file', ownDirs, param}: LocalPathCheck & {allowedDirs?: readonly string[]; ownDirs?: readonly string[]},
): Promise<string> {
  const unusable = () =>
    badRequest(`${param} must be the absolute path of ${kind === 'file' ? 'a file' : 'a folder'} on the service's machine (got ${JSON.stringify(value)}).`, param)
  if (typeof value !== 'string' || !isAbsolute(value)) throw unusable()
  const real = await confinedRealPath(value, {allowedDirs, ownDirs, param, shown: value, what: `the ${kind}`})
  if (!real || PSEUDO_ROOTS.some((root) => inside(real, root))) throw unusable()
  const info = await stat(real).catch(() => undefined)
  if (!(kind === 'file' ? info?.isFile() : info?.isDirectory())) throw unusable()
  return real
}

async function startsWithGgufMagic(path: string): Promise<boolean> {
  let file
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
    if (!(await file.stat()).isFile()) return false
    const {buffer, bytesRead} = await file.read(Buffer.alloc(GGUF_MAGIC.length), 0, GGUF_MAGIC.length, 0)
    return bytesRead === GGUF_MAGIC.length && buffer.equals(GGUF_MAGIC)
  } catch {
    return false
  } finally {
    await file?.close()
  }
}
