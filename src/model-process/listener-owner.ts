/**
 * Whose socket is listening on a port: an external program's health check must be answered by the program itself. Its
 * port is picked free, but a Python program binds it only after seconds of imports, and in that window another
 * process (another service's program, picked the same free port) can bind it and answer the health check in its
 * place. On Linux the kernel says who listens: /proc/net/tcp{,6} names the listening socket's inode, and a process
 * holding it has a `socket:[inode]` link under /proc/<pid>/fd. Only the program's own process group is searched, whose
 * descriptors the service may read (the program runs as the service's user).
 */
import {readdir, readFile, readlink} from 'node:fs/promises'

const TCP_LISTEN = '0A'
const TABLES = ['/proc/net/tcp', '/proc/net/tcp6']

/** The inodes of the sockets listening on `port` in one /proc/net/tcp table's text (any local address). */
export function listeningInodes(table: string, port: number): string[] {
  const inodes: string[] = []
  for (const line of table.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/)
    if (fields.length < 10 || fields[3] !== TCP_LISTEN) continue
    const localPort = Number.parseInt(fields[1].split(':').at(-1) ?? '', 16)
    if (localPort === port && fields[9] !== '0') inodes.push(fields[9])
  }

  return inodes
}

/** The process group in a /proc/<pid>/stat line: the fields after the command's closing parenthesis are state, ppid, pgrp. */
export function processGroupOf(stat: string): number | undefined {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const group = Number(fields[2])
  return Number.isInteger(group) ? group : undefined
}

const readOrEmpty = (path: string) => readFile(path, 'utf8').catch(() => '')

/**
 * Whether the socket listening on `port` belongs to a process of group `groupId`; undefined where this cannot be told
 * (no /proc, as on macOS, or no listening socket in this network namespace), where the caller takes the answer it got.
 */
export async function listenerIsInGroup(port: number, groupId: number): Promise<boolean | undefined> {
  const tables = await Promise.all(TABLES.map(readOrEmpty))
  const sockets = new Set(tables.flatMap((table) => listeningInodes(table, port)).map((inode) => `socket:[${inode}]`))
  if (sockets.size === 0) return undefined
  const pids = await readdir('/proc').catch(() => [] as string[])
  for (const pid of pids.filter((name) => /^\d+$/.test(name))) {
    if (processGroupOf(await readOrEmpty(`/proc/${pid}/stat`)) !== groupId) continue
    const descriptors = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])
    for (const descriptor of descriptors) {
      if (sockets.has(await readlink(`/proc/${pid}/fd/${descriptor}`).catch(() => ''))) return true
    }
  }

  return false
}
