/**
 * Python tools the tests need, installed once from PyPI into a cache outside the repository (~/.cache/service-test,
 * or SERVICE_TEST_CACHE) and reused by every later run: a fresh clone on a fresh machine pays for them once.
 */
import {execa} from 'execa'
import {createHash} from 'node:crypto'
import {existsSync} from 'node:fs'
import {mkdir, rename, rm, writeFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {join} from 'node:path'

import {bytecodeStep} from '../../src/python-env/install-steps.js'
import {UV_REQUIREMENT} from '../../src/python-env/uv-from-pypi.js'

export const TEST_CACHE = process.env.SERVICE_TEST_CACHE || join(homedir(), '.cache', 'service-test')
// The release the service itself installs where uv is missing, so the tests make environments as it does.
const UV_VERSION = UV_REQUIREMENT.replace('uv==', '')
/** Written into an environment whose modules are all compiled to bytecode. */
const BYTECODE_STAMP = 'compiled-bytecode'

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

/**
 * A Python virtual environment with `requirements` installed from PyPI by uv, made once in the test cache under a name
 * that the requirements determine, and reused by every later run; answers its Python. Made beside its place and renamed
 * into it, so that a run stopped halfway leaves no half-made environment behind.
 */
export async function pythonWithPackages(requirements: string[]): Promise<string> {
  const name = `python-packages-${createHash('sha256').update(requirements.join('\n')).digest('hex').slice(0, 16)}`
  const folder = join(TEST_CACHE, name)
  const python = join(folder, 'bin', 'python')
  const compiled = join(folder, BYTECODE_STAMP)
  if (existsSync(compiled)) return python
  if (existsSync(python)) {
    // Made before the environments were compiled at install: compiled once now, as the service compiles its own
    // (a compilation writes each file whole).
    const compile = bytecodeStep(folder)
    await execa(compile.file, compile.args)
    await writeFile(compiled, '')
    return python
  }

  const uv = join(await uvFromPyPI(), 'uv')
  const temporary = `${folder}.${process.pid}.tmp`
  await rm(temporary, {force: true, recursive: true})
  await execa(uv, ['venv', '--quiet', '--python', 'python3', temporary])
  // Compiled at install, as the service's environments are: the tests' Python would otherwise compile each import.
  await execa(uv, ['pip', 'install', '--quiet', '--compile-bytecode', ...requirements], {env: {VIRTUAL_ENV: temporary}})
  await writeFile(join(temporary, BYTECODE_STAMP), '')
  await rename(temporary, folder).catch(async (error: Error) => {
    // Another test run made it first.
    if (!existsSync(python)) throw error
  })
  await rm(temporary, {force: true, recursive: true})
  return python
}
