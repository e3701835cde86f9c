import {expect} from 'chai'
import {chmod, mkdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {ProgramRun, ProgramRunner} from '../../src/cli/engine-build.js'
import type {EngineBuild} from '../../src/kernel/contracts.js'

import {findOnPath, missingRequirementsError, planEngineBuild, runEngineBuild} from '../../src/cli/engine-build.js'
import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

const BUILD: EngineBuild = {
  command: ['/usr/bin/node', 'cli.js', 'source', 'download'],
  description: 'Compiles it for this CPU.',
  reportCommand: ['/usr/bin/node', 'report.js'],
  requires: [
    {aptPackage: 'cmake', name: 'cmake', programs: ['cmake']},
    {aptPackage: 'g++', name: 'a C++ compiler', programs: ['c++', 'g++', 'clang++']},
    {name: 'a build tool', programs: ['make', 'ninja']},
  ],
}

function kernelWith(build?: EngineBuild): Kernel {
  const engine = {formats: ['ggufv2'], hostModule: '/host.js', modelTypes: ['LLM'], parameters: {}}
  return Kernel.fromContributions(createKernelApi('0.0.0', quiet), [
    {contribution: {modelTypes: [{defaultAbilities: [], description: 'LLM', name: 'LLM'}]}, plugin: 'core'},
    {contribution: {engines: [{...engine, build, name: 'llama.cpp'}, {...engine, name: 'plain'}]}, plugin: 'engines'},
  ])
}

/** Programs found at /bin/<name>, for those named. */
const onPath = (...programs: string[]) => (program: string) => (programs.includes(program) ? `/bin/${program}` : undefined)

/** Answers each run with the next of `answers` and records what it was asked to run. */
function recordingRunner(...answers: ProgramRun[]): ProgramRunner & {runs: Array<[string[], string]>} {
  const runs: Array<[string[], string]> = []
  const run = async (command: string[], stdout: string) => {
    runs.push([command, stdout])
    const answer = answers.shift()
    if (!answer) throw new Error(`unexpected run of ${command.join(' ')}`)
    return answer
  }

  return Object.assign(run, {runs})
}

describe('engine build', () => {
  it('plans the engine named in any case, each requirement found by its first program on PATH', () => {
    const plan = planEngineBuild(kernelWith(BUILD), 'LLAMA.cpp', onPath('cmake', 'g++', 'clang++', 'ninja'))
    expect(plan).to.deep.include({command: BUILD.command, engine: 'llama.cpp', plugin: 'engines', reportCommand: BUILD.reportCommand})
    expect(plan.requirements.map((r) => r.found)).to.deep.equal(['/bin/cmake', '/bin/g++', '/bin/ninja'])
    expect(missingRequirementsError(plan)).to.equal(undefined)
  })

  it('refuses an engine that is not installed, naming those that are', () => {
    expect(() => planEngineBuild(kernelWith(BUILD), 'vllm', onPath()))
      .to.throw('no engine named "vllm" is installed here; installed engines: llama.cpp, plain.')
      .with.property('status', 404)
  })

  it('refuses an engine that declares no build', () => {
    expect(() => planEngineBuild(kernelWith(BUILD), 'plain', onPath()))
      .to.throw('engine plain (plugin engines) has nothing to build: it runs as installed.')
      .with.property('status', 400)
  })

  it('names every missing requirement with its programs and one apt install for those it knows', () => {
    const plan = planEngineBuild(kernelWith(BUILD), 'llama.cpp', onPath('make'))
    expect(missingRequirementsError(plan)?.message).to.equal(
      'building llama.cpp needs cmake, a C++ compiler (c++, g++ or clang++) on PATH, which are missing. Install them first; on Debian or Ubuntu: sudo apt install cmake g++.',
    )
    const onlyTool = planEngineBuild(kernelWith(BUILD), 'llama.cpp', onPath('cmake', 'c++'))
    expect(missingRequirementsError(onlyTool)?.message).to.equal('building llama.cpp needs a build tool (make or ninja) on PATH, which is missing. Install it first.')
  })

  it('runs nothing when a requirement is missing', async () => {
    const run = recordingRunner()
    const plan = planEngineBuild(kernelWith(BUILD), 'llama.cpp', onPath('cmake'))
    const error = await runEngineBuild(plan, run).catch((error_: Error) => error_)
    expect(error).to.have.property('message').that.match(/^building llama.cpp needs a C\+\+ compiler/)
    expect(run.runs).to.deep.equal([])
  })

  it('runs the build on the terminal, then captures the report of the build in use', async () => {
    const run = recordingRunner({exitCode: 0}, {exitCode: 0, stdout: 'Models launched now use the local build (CPU).\n'})
    const result = await runEngineBuild(planEngineBuild(kernelWith(BUILD), 'llama.cpp', onPath('cmake', 'c++', 'make')), run)
    expect(run.runs).to.deep.equal([
      [BUILD.command, 'inherit'],
      [BUILD.reportCommand, 'capture'],
    ])
    expect(result).to.deep.include({exitCode: 0, report: 'Models launched now use the local build (CPU).'})
  })

  it('hands back a failed build its exit code and signal, and asks for no report', async () => {
    const run = recordingRunner({exitCode: 130, signal: 'SIGINT'})
    const result = await runEngineBuild(planEngineBuild(kernelWith(BUILD), 'llama.cpp', onPath('cmake', 'c++', 'make')), run)
    expect(result).to.deep.include({exitCode: 130, signal: 'SIGINT'})
    expect(result).to.not.have.property('report')
    expect(run.runs).to.have.length(1)
  })

  it('keeps a successful build when its report fails, and says the report failed', async () => {
    const run = recordingRunner({exitCode: 0}, {exitCode: 1, stdout: ''})
    const result = await runEngineBuild(planEngineBuild(kernelWith(BUILD), 'llama.cpp', onPath('cmake', 'c++', 'make')), run)
    expect(result).to.deep.include({exitCode: 0, reportProblem: '/usr/bin/node report.js ended with exit code 1'})
  })

  it('says which program could not be started', async () => {
    const run: ProgramRunner = async () => {
      throw new Error('spawn /usr/bin/node ENOENT')
    }

    const error = await runEngineBuild(planEngineBuild(kernelWith({...BUILD, requires: []}), 'llama.cpp', onPath()), run).catch((error_: Error) => error_)
    expect(error).to.have.property('message', 'could not start /usr/bin/node: spawn /usr/bin/node ENOENT')
  })

  it('finds programs on PATH as a shell does: the first executable file of that name', async () => {
    const directory = await temporaryDirectory('service-engine-build-')
    try {
      const [first, second] = [join(directory, 'first'), join(directory, 'second')]
      await mkdir(first)
      await mkdir(second)
      await writeFile(join(first, 'cmake'), '')
      await mkdir(join(first, 'make'))
      for (const program of ['cmake', 'make']) {
        await writeFile(join(second, program), '#!/bin/sh\n')
        await chmod(join(second, program), 0o755)
      }

      const path = ['', first, second].join(':')
      expect(findOnPath('cmake', path)).to.equal(join(second, 'cmake'))
      expect(findOnPath('make', path)).to.equal(join(second, 'make'))
      expect(findOnPath('ninja', path)).to.equal(undefined)
    } finally {
      await rm(directory, {force: true, recursive: true})
    }
  })
})
