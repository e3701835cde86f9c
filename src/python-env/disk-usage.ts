/**
 * What environments take on disk when uv hard-links the same package files into several of them: a file is one
 * inode however many environments name it, so each environment's size is told three ways (see `FolderUsage`).
 */
import {lstat, readdir} from 'node:fs/promises'
import {join} from 'node:path'

export interface FolderUsage {
  /** Bytes of its files, as if it were alone on the disk. */
  size_bytes: number
  /** Of those, the bytes of files hard-linked into another of the folders as well. */
  shared_bytes: number
  /** Its part of the folders' disk space together: a shared file counted in the first folder (in the order given) that has it, as `du` counts; the parts add up to the whole. */
  disk_bytes: number
}

interface FileEntry {
  size: number
  /** The indexes of the folders that name it. */
  folders: Set<number>
}

/** Every regular file under the folders, by inode (`dev:ino`); links and folders are not counted. */
async function filesByInode(folders: string[]): Promise<Map<string, FileEntry>> {
  const files = new Map<string, FileEntry>()
  for (const [index, folder] of folders.entries()) {
    const entries = await readdir(folder, {recursive: true, withFileTypes: true}).catch(() => [])
    for (const entry of entries) {
      if (!entry.isFile()) continue
      const stats = await lstat(join(entry.parentPath, entry.name), {bigint: true}).catch(() => undefined)
      if (!stats) continue
      const key = `${stats.dev}:${stats.ino}`
      const known = files.get(key) ?? {folders: new Set<number>(), size: Number(stats.size)}
      known.folders.add(index)
      files.set(key, known)
    }
  }

  return files
}

/** Each folder's usage, in the order given. */
export async function folderUsages(folders: string[]): Promise<FolderUsage[]> {
  const usages = folders.map(() => ({disk_bytes: 0, shared_bytes: 0, size_bytes: 0}))
  for (const {folders: holders, size} of (await filesByInode(folders)).values()) {
    for (const index of holders) {
      usages[index].size_bytes += size
      if (holders.size > 1) usages[index].shared_bytes += size
    }

    usages[Math.min(...holders)].disk_bytes += size
  }

  return usages
}
