/**
 * SERVICE_HOME holds what only the user running the service may read: registrations (which may carry a hub token
 * or an index URL with its password), revoked tokens, desired models, launch history, logs and uploads. The home
 * is made 0700 before anything is written, the process's umask is set to 0077 so that whatever it and its model
 * processes create (weights, virtual environments, builds) is private too, and the service's own files are
 * written with these modes explicitly as well, so that no write depends on the umask alone.
 */
import {chmod, mkdir, readdir, stat} from 'node:fs/promises'
import {join} from 'node:path'

export const PRIVATE_FILE = 0o600
export const PRIVATE_FOLDER = 0o700
/** Group and other permission bits. */
const SHARED_BITS = 0o077

/**
 * Makes the home private and answers the warnings for the service's log: what held group or other permissions and
 * was closed, and what could not be (a home another user owns, as a volume's root may be). Folders below the top
 * level are left as they are, the home being closed to others.
 */
export async function makeHomePrivate(home: string): Promise<string[]> {
  process.umask(SHARED_BITS)
  await mkdir(home, {mode: PRIVATE_FOLDER, recursive: true})
  const tightened: string[] = []
  const refused: string[] = []
  const tighten = async (path: string) => {
    const {mode} = await stat(path)
    if ((mode & SHARED_BITS) === 0) return
    const shown = `${path} (${(mode & 0o777).toString(8)})`
    try {
      await chmod(path, mode & ~SHARED_BITS & 0o7777)
      tightened.push(shown)
    } catch (error) {
      const {code} = error as NodeJS.ErrnoException
      if (code !== 'EPERM' && code !== 'EROFS') throw error
      refused.push(`${shown}: ${code}`)
    }
  }

  await tighten(home)
  for (const entry of await readdir(home, {withFileTypes: true})) if (entry.isFile() || entry.isDirectory()) await tighten(join(home, entry.name))
  return [
    ...(tightened.length > 0 ? [`SERVICE_HOME was readable by other users: removed group and other permissions from ${tightened.join(', ')}`] : []),
    ...(refused.length > 0
      ? [`SERVICE_HOME stays readable by other users: the service's user may not change ${refused.join(', ')}; make the folder that user's, or give it a SERVICE_HOME of its own inside it`]
      : []),
  ]
}
