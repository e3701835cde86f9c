/**
 * Python tools the tests need, installed once from PyPI into a cache outside the repository (~/.cache/service-test,
 * or SERVICE_TEST_CACHE) and reused by every later run: a fresh clone on a fresh machine pays for them once.
 */
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {mkdir, rename, rm} from 'node:fs/promises'
import {homedir} from 'node:os'
import {join} from 'node:path'

export const TEST_CACHE = process.env.SERVICE_TEST_CACHE || join(homedir(), '.cache', 'service-test')
const UV_VERSION = '0.13.9'

/** The folder holding `uv`, pip-installed from PyPI into the test cache unless it is there already. */
export async function uvFromPyPI(): Promise<string> {
  const folder = join(TEST_CACHE, `uv-${UV_VERSION}`)
  const bin = join(folder, 'bin')
  if (existsSync(join(bin, 'uv'))) return bin
  await mkdir(TEST_CACHE, {recursive: true})
  // Installed beside its place and renamed into it, so that a run stopped halfway leaves no broken uv behind.
  const temporary = `${folder}.${process.pid}.tmp`
  await execa('python3', ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--quiet', '--target', temporary, `uv==${UV_VERSION}`])
  await rename(temporary, folder).catch(async (error: Error) => {
    // Another test run installed it first.
    if (!existsSync(join(bin, 'uv'))) throw error
  })
  await rm(temporary, {force: true, recursive: true})
  return bin
}
