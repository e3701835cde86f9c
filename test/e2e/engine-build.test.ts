/**
 * `servicectl engine build` as a real process, with the plugins installed here and a PATH of stand-in programs
 * (each records that it ran), so that the checks do not depend on this machine's compilers. The real build
 * (about ten minutes) is never run: the cases either stop at a check or are dry runs.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {chmod, mkdir, readdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {ROOT, SERVICECTL, servicectl, temporaryDirectory} from '../helpers/service.js'

const PROGRAMS = ['cmake', 'c++', 'cc', 'make', 'git', 'npm']
const BUILD_PORTABLE = join(ROOT, 'plugins/engine-llama-cpp/dist/build-portable.js')

describe('servicectl engine build', function () {
  let work: string
  let home: string
  let allPrograms: string
  let noCmake: string
  let ran: string

  /** servicectl with only `path` on PATH: run with this node directly, as PATH may not lead to one. */
  const build = async (args: string[], path: string, env: Record<string, string> = {}) => {
    const result = await execa(process.execPath, [SERVICECTL, 'engine', 'build', ...args], {
      env: {...env, NO_COLOR: '1', PATH: path, SERVICE_HOME: home},
      extendEnv: false,
      reject: false,
    })
    return {exitCode: result.exitCode, stderr: String(result.stderr), stdout: String(result.stdout)}
  }

  before(async () => {
    work = await temporaryDirectory('service-engine-build-')
    home = join(work, 'home')
    ran = join(work, 'ran')
    allPrograms = join(work, 'all')
    noCmake = join(work, 'no-cmake')
    for (const [directory, programs] of [
      [allPrograms, PROGRAMS],
      [noCmake, PROGRAMS.filter((program) => program !== 'cmake')],
    ] as const) {
      await mkdir(directory)
      for (const program of programs) {
        await writeFile(join(directory, program), `#!/bin/sh\necho "$0" >> '${ran}'\nexit 1\n`)
        await chmod(join(directory, program), 0o755)
      }
    }
  })

  after(async () => {
    await rm(work, {force: true, recursive: true})
  })

  afterEach(async () => {
    expect(await readdir(work), 'a stand-in program ran').to.not.include('ran')
  })

  it('prints the exact command and where each program it needs was found, and runs nothing with --dry-run', async () => {
    const result = await build(['llama.cpp', '--dry-run'], allPrograms)
    expect(result.exitCode, result.stderr).to.equal(0)
    expect(result.stdout).to.match(/^llama\.cpp \(@service-toolkit\/plugin-engine-llama-cpp\): Compiles llama\.cpp from the source bundled with node-llama-cpp, with OpenMP and one CPU backend per instruction-set level/)
    expect(result.stdout).to.contain(`  needs cmake: ${join(allPrograms, 'cmake')}\n`)
    expect(result.stdout).to.contain(`  needs a C++ compiler: ${join(allPrograms, 'c++')}\n`)
    expect(result.stdout).to.contain(`\nCommand: ${process.execPath} ${BUILD_PORTABLE}\n`)
    expect(result.stdout.trimEnd().split('\n').at(-1)).to.equal('Dry run: nothing was run.')
  })

  it('describes the dry run with --json', async () => {
    const result = await build(['LLAMA.CPP', '--dry-run', '--json'], allPrograms)
    expect(result.exitCode, result.stderr).to.equal(0)
    const output = JSON.parse(result.stdout)
    expect(output).to.deep.include({
      command: [process.execPath, BUILD_PORTABLE],
      dry_run: true,
      engine: 'llama.cpp',
      plugin: '@service-toolkit/plugin-engine-llama-cpp',
    })
    expect(output.requirements.map((r: {found: string}) => r.found)).to.deep.equal(PROGRAMS.map((program) => join(allPrograms, program)))
  })

  it('refuses to start when a program is missing, naming it and how to install it', async () => {
    const result = await build(['llama.cpp'], noCmake)
    expect(result.exitCode).to.equal(1)
    expect(result.stdout).to.contain('  needs cmake: missing (none of cmake on PATH)\n')
    expect(result.stderr).to.equal('Error: building llama.cpp needs cmake on PATH, which is missing. Install it first; on Debian or Ubuntu: sudo apt install cmake.')
  })

  it('names the installed engines when the engine is unknown', async () => {
    const result = await build(['lmdeploy'], allPrograms)
    expect(result.exitCode).to.equal(1)
    expect(result.stdout).to.equal('')
    expect(result.stderr).to.equal('Error: no engine named "lmdeploy" is installed here; installed engines: diffusers, llama.cpp, MLX, onnxruntime, piper, python, sglang, stable-diffusion.cpp, transformers, vits, vllm, whisper.cpp.')
  })

  describe('with plugins of its own', () => {
    before(async function () {
      this.timeout(30_000)
      const plain = join(work, 'plain-plugin')
      const scaffolded = await servicectl(['scaffold', 'engine', 'plain-engine', '--dir', plain])
      expect(scaffolded.exitCode, scaffolded.stderr).to.equal(0)
      const quick = join(work, 'quick-plugin')
      await mkdir(quick)
      await writeFile(join(quick, 'package.json'), JSON.stringify({name: 'quick-build-plugin', oclif: {hooks: {'service:register': './register.js'}}, type: 'module'}))
      await writeFile(join(quick, 'register.js'), quickBuildPlugin())
      // One after the other: both write the plugin list in SERVICE_HOME/plugins/package.json.
      for (const plugin of [plain, quick]) {
        const linked = await servicectl(['plugins', 'link', plugin, '--no-install'], {env: {SERVICE_HOME: home}})
        expect(linked.exitCode, linked.stderr).to.equal(0)
      }
    })

    it('says an engine whose plugin declares no build has nothing to build', async () => {
      const result = await build(['plain-engine'], allPrograms)
      expect(result.exitCode).to.equal(1)
      expect(result.stderr).to.equal('Error: engine plain-engine (plugin service-toolkit-plugin-engine-plain-engine) has nothing to build: it runs as installed.')
      expect((await build(['nope'], allPrograms)).stderr).to.contain('installed engines: diffusers, llama.cpp, MLX, onnxruntime, piper, plain-engine, python, quick-build, sglang, stable-diffusion.cpp, transformers, vits, vllm, whisper.cpp.')
    })

    it('runs the build on the terminal, then says which build the engine uses now', async () => {
      const result = await build(['quick-build'], allPrograms)
      expect(result.exitCode, result.stderr).to.equal(0)
      expect(result.stdout).to.contain('\ncompiling\n\nBuilt quick-build. Models launched now use the quick build.\n')
      expect(result.stdout).to.contain('models launched from now on use the new build without restarting the service')
    })

    it('exits with the exit code of a failed build, and says so in one line', async () => {
      const result = await build(['quick-build'], allPrograms, {BUILD_EXIT: '3'})
      expect(result.exitCode).to.equal(3)
      expect(result.stdout).to.contain('\ncompiling')
      expect(result.stdout).to.not.contain('Built')
      expect(result.stderr).to.equal('Error: building quick-build failed with exit code 3; its output above says why.')
    })

    it('keeps standard output for the result with --json, sending the build\'s own output to standard error', async () => {
      const result = await build(['quick-build', '--json'], allPrograms)
      expect(result.exitCode, result.stderr).to.equal(0)
      expect(JSON.parse(result.stdout)).to.deep.include({dry_run: false, engine: 'quick-build', exit_code: 0, report: 'Models launched now use the quick build.'})
      expect(result.stderr).to.equal('compiling')
    })
  })
})

/** A plugin whose engine builds in an instant: prints, then exits with BUILD_EXIT (0 unless set). */
function quickBuildPlugin(): string {
  const node = JSON.stringify(process.execPath)
  return `export default async () => ({
  engines: [{
    name: 'quick-build', modelTypes: ['LLM'], formats: ['quick'], parameters: {}, hostModule: '/nowhere/host.js',
    build: {
      description: 'Builds in an instant.',
      command: [${node}, '-e', "console.log('compiling'); process.exit(Number(process.env.BUILD_EXIT ?? 0))"],
      reportCommand: [${node}, '-e', "console.log('Models launched now use the quick build.')"],
      requires: [{name: 'cmake', programs: ['cmake'], aptPackage: 'cmake'}],
    },
  }],
})
`
}
