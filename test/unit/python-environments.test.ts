/**
 * PythonEnvironments with the installer's programs injected: one making for launches that wait together, a making
 * that goes on while any launch still waits for it, and stops (leaving nothing) once the last one leaves.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {RunningProgram, SpawnProgram} from '../../src/model-process/program-spawner.js'

import {mergeVirtualEnv} from '../../src/kernel/virtualenv.js'
import {environmentName, MARKER, PythonEnvironments} from '../../src/python-env/environments.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

/** Installer steps that create the folder at once and finish only when the test says so (or are killed). */
function heldInstaller() {
  const running: Array<{finish(): void; args: string[]}> = []
  const spawn: SpawnProgram = ({args}) => {
    let settle!: (exit: {exitCode: number | null; signal: string | null}) => void
    const exited = new Promise<{exitCode: number | null; signal: string | null}>((resolve) => (settle = resolve))
    // `uv venv … DIR` makes the folder; `uv pip install` waits.
    if (args[0] === 'venv') void mkdir(join(args.at(-1)!, 'bin'), {recursive: true}).then(() => settle({exitCode: 0, signal: null}))
    else running.push({args, finish: () => settle({exitCode: 0, signal: null})})
    const program: RunningProgram = {exited, kill: (signal) => settle({exitCode: null, signal}), outputTail: () => [], pid: 1}
    return program
  }

  const probe = async (file: string) => ({exitCode: 0, stderr: '', stdout: file === 'uv' ? 'uv 0.13.9' : '/usr/bin/python3\n3.11.7\n'})
  return {probe, running, spawn}
}

describe('Python environments (installer injected)', () => {
  let root: string

  beforeEach(async () => {
    root = join(await temporaryDirectory('service-pyenv-unit-'), 'virtualenv')
  })

  const until = async (check: () => boolean) => {
    while (!check()) await new Promise((resolve) => setTimeout(resolve, 5))
  }

  it('makes one environment for launches that wait together, and goes on when one of them leaves', async () => {
    const installer = heldInstaller()
    const environments = new PythonEnvironments({...installer, log: quiet, root})
    const request = mergeVirtualEnv({packages: ['six']}, undefined)
    const leaving = new AbortController()
    const first = environments.ensure(request, {logFile: join(root, '..', 'a.log'), signal: leaving.signal})
    const second = environments.ensure(request, {logFile: join(root, '..', 'b.log'), signal: new AbortController().signal})
    await until(() => installer.running.length > 0)
    leaving.abort()
    expect(await first.catch((error) => error)).to.include({code: 'request_aborted', status: 499})
    installer.running[0].finish()
    const made = await second
    expect(installer.running).to.have.length(1)
    expect(made.executable).to.equal(join(made.envDir, 'bin', 'python'))
    expect(await readdir(root)).to.deep.equal([made.envDir.split('/').at(-1)])
    expect((await environments.list()).map((environment) => environment.packages)).to.deep.equal([['six']])
  })

  it('stops the making when the last launch leaves, and leaves no folder behind', async () => {
    const installer = heldInstaller()
    const environments = new PythonEnvironments({...installer, log: quiet, root})
    const leaving = new AbortController()
    const waiting = environments.ensure(mergeVirtualEnv({packages: ['six']}, undefined), {logFile: join(root, '..', 'a.log'), signal: leaving.signal})
    await until(() => installer.running.length > 0)
    expect((await readdir(root)).some((name) => name.startsWith('.creating-'))).to.equal(true)
    leaving.abort()
    expect(await waiting.catch((error) => error)).to.include({code: 'request_aborted'})
    expect(existsSync(root) ? await readdir(root) : []).to.deep.equal([])
  })

  it('compiles an environment made before installs compiled its modules, once, when its models next launch', async () => {
    const installer = heldInstaller()
    const environments = new PythonEnvironments({...installer, log: quiet, root})
    const request = mergeVirtualEnv({packages: ['six']}, undefined)
    const name = environmentName('3.11.7', request)
    const marker = join(root, name, MARKER)
    await mkdir(join(root, name), {recursive: true})
    await writeFile(marker, JSON.stringify({created_at: '2026-11-01T00:00:00.000Z', installer: 'uv', name, packages: ['six'], python: '3.11.7', request}))
    const launches = [1, 2].map(() => environments.ensure(request, {logFile: join(root, '..', 'a.log'), signal: new AbortController().signal}))
    await until(() => installer.running.length > 0)
    expect(installer.running.map(({args}) => args.at(-1))).to.deep.equal([join(root, name, 'lib')])
    installer.running[0].finish()
    expect((await Promise.all(launches)).map(({envDir}) => envDir)).to.deep.equal([join(root, name), join(root, name)])
    expect(JSON.parse(await readFile(marker, 'utf8'))).to.include({bytecode: true, name})
    await environments.ensure(request, {logFile: join(root, '..', 'a.log'), signal: new AbortController().signal})
    expect(installer.running).to.have.length(1)
  })

  it('records that a new environment was compiled at install', async () => {
    const installer = heldInstaller()
    const environments = new PythonEnvironments({...installer, log: quiet, root})
    const making = environments.ensure(mergeVirtualEnv({packages: ['six']}, undefined), {logFile: join(root, '..', 'a.log'), signal: new AbortController().signal})
    await until(() => installer.running.length > 0)
    expect(installer.running[0].args).to.include('--compile-bytecode')
    installer.running[0].finish()
    const {envDir} = await making
    expect(JSON.parse(await readFile(join(envDir, MARKER), 'utf8'))).to.include({bytecode: true})
    expect(installer.running).to.have.length(1)
  })
})
