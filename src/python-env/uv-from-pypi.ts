/**
 * uv for a machine that lacks it: installed once from the package index into the environments' folder (`.uv/`),
 * in a virtual environment of its own made with Python's venv and pip, which read the machine's pip configuration
 * (its index and mirrors) as an environment made with pip would. uv is what lets environments share package files
 * (hard links from its cache), so a machine without it would otherwise copy torch into every environment.
 */
import {randomBytes} from 'node:crypto'
import {existsSync} from 'node:fs'
import {rename, rm} from 'node:fs/promises'
import {join} from 'node:path'

import type {Logger} from '../kernel/contracts.js'

/** The uv release installed, pinned so that every machine makes environments with the same installer. */
export const UV_REQUIREMENT = 'uv==0.13.9'
const FOLDER = '.uv'

/** Runs a program to its end; its exit code and the last of its output. */
export type RunProgram = (file: string, args: string[]) => Promise<{exitCode: number; output: string}>

async function execaRun(file: string, args: string[]) {
  const {execa} = await import('execa')
  const result = await execa(file, args, {all: true, reject: false, stdin: 'ignore', timeout: 10 * 60_000})
  return {exitCode: result.exitCode ?? 1, output: result.all ?? result.shortMessage ?? ''}
}

/** The `uv` program under `root`, installed first when it is not there; undefined (and a warning) when it cannot be. */
export async function uvFromPyPI(root: string, python: string, log: Logger, run: RunProgram = execaRun): Promise<string | undefined> {
  const folder = join(root, FOLDER)
  const uv = join(folder, 'bin', 'uv')
  if (existsSync(uv)) return uv
  // Made beside its place and renamed into it: a service stopped halfway leaves no broken uv behind.
  const temporary = join(root, `.creating-${process.pid}-${randomBytes(4).toString('hex')}-uv`)
  log.info(`uv is not on PATH: installing ${UV_REQUIREMENT} into ${folder}, so that Python environments share package files instead of copying them`)
  try {
    for (const [file, args] of [
      [python, ['-m', 'venv', temporary]],
      [join(temporary, 'bin', 'python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', UV_REQUIREMENT]],
    ] as const) {
      const {exitCode, output} = await run(file, [...args])
      if (exitCode !== 0) throw new Error(`${[file, ...args].join(' ')} exited with code ${exitCode}: ${output.trim().split('\n').slice(-3).join(' | ')}`)
    }

    // Another service sharing the folder may have installed it first; either is the same uv.
    await rename(temporary, folder).catch((error: Error) => {
      if (!existsSync(uv)) throw error
    })
    return uv
  } catch (error) {
    log.warn(`could not install uv (${(error as Error).message}); Python environments are made with pip, each with its own copy of every package`)
    return undefined
  } finally {
    await rm(temporary, {force: true, recursive: true})
  }
}
