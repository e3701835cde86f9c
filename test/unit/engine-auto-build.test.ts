/**
 * The background build's decisions and its runner, with every side effect injected: programs on PATH, the probe and
 * report commands, the build process (a fake that prints what it is told and exits when told), the lock. No build
 * runs here; the e2e test engine-auto-build.test.ts runs a stand-in build program through a real service.
 */
import {expect} from 'chai'
import {mkdir, readFile, rm, utimes, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {EngineBuildPlan} from '../../src/kernel/engine-build-plan.js'
import type {BuildLock, BuildLockCheck, BuildStarter, OutputReader} from '../../src/service/build-process.js'

import {autoBuildVerdict} from '../../plugins/engine-llama-cpp/src/auto-build-verdict.js'
import {buildInProgress} from '../../plugins/engine-llama-cpp/src/build-in-progress.js'
import {buildLockHeld, takeBuildLock} from '../../src/service/build-process.js'
import {buildStatusLine} from '../../src/cli/engine-build-status.js'
import {
  autoBuildAllowed,
  autoBuildSetting,
  type BuildProgress,
  firstDecision,
  followBuildOutput,
  parseAutoBuildSetting,
  parseProbeOutput,
  progressWorthLogging,
  startProgress,
  TAIL_LINES,
} from '../../src/service/engine-auto-build.js'
import {engineBuildProblem} from '../../src/kernel/kernel.js'
import {EngineAutoBuilder} from '../../src/service/engine-auto-builder.js'
import {temporaryDirectory} from '../helpers/service.js'

const PROBE = ['/usr/bin/node', 'report.js', '--probe']
const REPORT = ['/usr/bin/node', 'report.js']
const COMMAND = ['/usr/bin/node', 'cli.js', 'source', 'download']

function plan(folder: string, overrides: Partial<EngineBuildPlan> = {}): EngineBuildPlan {
  return {
    auto: {folder, probeCommand: PROBE},
    command: COMMAND,
    description: 'Compiles it for this CPU.',
    engine: 'llama.cpp',
    plugin: 'engines',
    reportCommand: REPORT,
    requirements: [{aptPackage: 'cmake', found: '/bin/cmake', name: 'cmake', programs: ['cmake']}],
    ...overrides,
  }
}

const follow = (lines: string[], from: BuildProgress = startProgress()) => lines.reduce(followBuildOutput, from)

describe('background engine build: decisions', () => {
  it('reads SERVICE_AUTO_BUILD as on (unset, 1, true), off (0, false, no, off) or a list of engines, and --(no-)auto-build over it', () => {
    for (const on of [undefined, '', '1', 'true', 'ON']) expect(parseAutoBuildSetting(on), String(on)).to.equal(true)
    for (const off of ['0', 'false', 'no', 'Off']) expect(parseAutoBuildSetting(off), String(off)).to.equal(false)
    expect(autoBuildSetting(false, {SERVICE_AUTO_BUILD: '1'}), 'the flag wins').to.equal(false)
    expect(autoBuildSetting(undefined, {SERVICE_AUTO_BUILD: '0'})).to.equal(false)
    expect(autoBuildSetting(undefined, {}), 'on by default').to.equal(true)
    for (const ci of ['true', '1', 'yes']) expect(autoBuildSetting(undefined, {CI: ci}), `CI=${ci}`).to.equal(false)
    expect(autoBuildSetting(undefined, {CI: 'false'})).to.equal(true)
    expect(autoBuildSetting(undefined, {CI: 'true', SERVICE_AUTO_BUILD: 'llama.cpp'}), 'SERVICE_AUTO_BUILD wins over CI').to.deep.equal(['llama.cpp'])
    expect(autoBuildSetting(true, {CI: 'true'}), 'the flag wins over CI').to.equal(true)
    expect(parseAutoBuildSetting('llama.cpp, Whisper.cpp')).to.deep.equal(['llama.cpp', 'whisper.cpp'])
    expect(autoBuildAllowed(['llama.cpp'], 'LLAMA.cpp')).to.equal(true)
    expect(autoBuildAllowed(['whisper.cpp'], 'llama.cpp')).to.equal(false)
  })

  it('is off when turned off, unavailable when a program is missing (named, with the apt hint), else asks the probe', () => {
    expect(firstDecision(plan('/f'), false)).to.deep.include({engine: 'llama.cpp', state: 'off'})
    expect(firstDecision(plan('/f'), ['vllm'])).to.deep.include({state: 'off'})
    const missing = firstDecision(plan('/f', {requirements: [{aptPackage: 'cmake', name: 'cmake', programs: ['cmake']}]}), true)
    expect(missing).to.deep.equal({
      engine: 'llama.cpp',
      reason: 'building llama.cpp needs cmake on PATH, which is missing. Install it first; on Debian or Ubuntu: sudo apt install cmake.',
      state: 'unavailable',
    })
    expect(firstDecision(plan('/f'), true)).to.equal('probe')
  })

  it('checks a plugin\'s `build.auto`: an absolute folder and a probe command', () => {
    const build = {command: ['/usr/bin/node', 'build.js'], description: 'Compiles it.'}
    expect(engineBuildProblem({...build, auto: {folder: '/opt/x/llama', probeCommand: PROBE}})).to.equal(undefined)
    for (const auto of [{folder: 'llama', probeCommand: PROBE}, {folder: '/opt/x', probeCommand: []}, {folder: '/opt/x'}, 'yes'])
      expect(engineBuildProblem({...build, auto: auto as never}), JSON.stringify(auto)).to.equal(
        'build.auto must be {folder, probeCommand}: the absolute folder the build writes into, and the probe as a non-empty list of strings',
      )
  })

  it("takes the probe's last line as its verdict, and says what came when it is not one", () => {
    expect(parseProbeOutput('a notice\n{"wanted":true,"reason":"prebuilt"}\n')).to.deep.equal({reason: 'prebuilt', wanted: true})
    expect(() => parseProbeOutput('Segmentation fault')).to.throw('printed "Segmentation fault", not a JSON line')
    expect(() => parseProbeOutput('{"wanted":"yes"}')).to.throw('without "wanted" (boolean) and "reason" (string)')
  })

  it("llama.cpp's probe wants a build only on the prebuilt CPU binaries", () => {
    expect(autoBuildVerdict('prebuilt', false).wanted).to.equal(true)
    expect(autoBuildVerdict('localBuild', false)).to.deep.equal({reason: 'models launched now already use the local build of llama.cpp.', wanted: false})
    expect(autoBuildVerdict('prebuilt', 'cuda')).to.deep.include({wanted: false})
    expect(autoBuildVerdict('prebuilt', 'cuda').reason).to.contain('GPU (cuda)')
  })

  it("follows cmake's and ninja's progress, without colours, keeping the last lines", () => {
    const preparing = follow(['\u001B[34mCloning llama.cpp\u001B[39m', '', '-- Configuring done'])
    expect(preparing).to.deep.equal({lines: 2, stage: 'preparing', tail: ['Cloning llama.cpp', '-- Configuring done']})
    const compiling = follow(['[  7%] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o', '[ 42%] Building CXX object src/llama.cpp.o'], preparing)
    expect(compiling).to.deep.include({lines: 4, percent: 42, stage: 'compiling'})
    expect(follow(['[12/80] Building CXX object x.o']).percent).to.equal(15)
    expect(follow(['[100/0] odd']).percent).to.equal(undefined)
    const long = follow(Array.from({length: 30}, (_, i) => `line ${i}`))
    expect(long.tail).to.have.length(TAIL_LINES)
    expect(long.tail.at(-1)).to.equal('line 29')
  })

  it('logs the start of compiling and each tenth of the way, not every line', () => {
    const at = (percent?: number): BuildProgress => ({lines: 1, percent, stage: percent === undefined ? 'preparing' : 'compiling', tail: []})
    expect(progressWorthLogging(at(), at(3))).to.equal(true)
    expect(progressWorthLogging(at(3), at(8))).to.equal(false)
    expect(progressWorthLogging(at(8), at(11))).to.equal(true)
    expect(progressWorthLogging(at(), at())).to.equal(false)
  })
})

describe('background engine build: the line under `servicectl engine`', () => {
  it('speaks of a build that runs, failed or succeeded, and of nothing else', () => {
    expect(buildStatusLine({engine: 'llama.cpp', percent: 42, stage: 'compiling', state: 'building'})).to.equal(
      'llama.cpp is being built for this machine in the background (42%, compiling); models launched before it ends use the current binaries.',
    )
    expect(buildStatusLine({engine: 'llama.cpp', error: 'exit code 2', state: 'failed'})).to.equal(
      "llama.cpp's background build failed (exit code 2); `servicectl engine build llama.cpp` tries again, with its output on the terminal.",
    )
    expect(buildStatusLine({binaries: 'Models launched now use the local build of llama.cpp (CPU).', engine: 'llama.cpp', state: 'succeeded'})).to.equal(
      'llama.cpp was built for this machine in the background. Models launched now use the local build of llama.cpp (CPU).',
    )
    for (const state of ['off', 'unavailable', 'checking', 'not_needed'] as const) expect(buildStatusLine({engine: 'llama.cpp', state})).to.equal(undefined)
    expect(buildStatusLine(undefined)).to.equal(undefined)
  })
})

describe('background engine build: locks', () => {
  let folder: string

  beforeEach(async () => {
    folder = await temporaryDirectory('service-build-lock-')
  })

  afterEach(async () => {
    await rm(folder, {force: true, recursive: true})
  })

  it('lets one holder at a time take the service\'s build lock', async () => {
    const release = await takeBuildLock(folder)
    expect(release, 'the lock was free').to.be.a('function')
    expect(await takeBuildLock(folder), 'a second holder').to.equal(undefined)
    await release!()
    const again = await takeBuildLock(folder)
    expect(again, 'free again').to.be.a('function')
    await again!()
  })

  it('sees a live holder of the build lock, and none once a killed holder has left it to go stale', async () => {
    expect(await buildLockHeld(folder), 'no lock').to.equal(false)
    const release = await takeBuildLock(folder)
    expect(await buildLockHeld(folder), 'held here').to.equal(true)
    await release!()
    expect(await buildLockHeld(folder), 'released').to.equal(false)
    // What a service killed with SIGKILL leaves: proper-lockfile's folder, no longer refreshed.
    const left = join(folder, 'service-auto-build.lock')
    await mkdir(left)
    expect(await buildLockHeld(folder), 'just left').to.equal(true)
    const minuteAgo = new Date(Date.now() - 60_000)
    await utimes(left, minuteAgo, minuteAgo)
    expect(await buildLockHeld(folder), 'stale').to.equal(false)
    const takenOver = await takeBuildLock(folder)
    expect(takenOver, 'the next start takes it over').to.be.a('function')
    await takenOver!()
  })

  it("sees a llama.cpp build by node-llama-cpp's lock in localBuilds, and not one left behind by a killed build", async () => {
    expect(await buildInProgress(join(folder, 'absent'))).to.equal(false)
    await mkdir(join(folder, 'linux-x64'))
    expect(await buildInProgress(folder), 'a finished build').to.equal(false)
    await mkdir(join(folder, 'linux-x64.lock'))
    expect(await buildInProgress(folder), 'a fresh lock').to.equal(true)
    const minuteAgo = new Date(Date.now() - 60_000)
    await utimes(join(folder, 'linux-x64.lock'), minuteAgo, minuteAgo)
    expect(await buildInProgress(folder), 'a stale lock').to.equal(false)
  })
})

/** A build that prints the lines it is given and exits when `exit` is called; `stop` ends it as a signal would. */
function fakeBuild() {
  const started: string[][] = []
  let print: (line: string) => void = () => {}
  let finish: (result: {exitCode: number; signal?: string}) => void = () => {}
  const stops: number[] = []
  const start: BuildStarter = (command, onLine) => {
    started.push(command)
    print = onLine
    return {
      exited: new Promise((resolve) => (finish = resolve)),
      pid: 4242,
      stop() {
        stops.push(1)
        finish({exitCode: 143, signal: 'SIGTERM'})
      },
    }
  }

  return {exit: (exitCode: number) => finish({exitCode}), print: (...lines: string[]) => lines.forEach((line) => print(line)), start, started, stops}
}

function answers(probe: string, report = 'Models launched now use the local build of llama.cpp (CPU).'): OutputReader & {asked: string[][]} {
  const asked: string[][] = []
  const read = async (command: string[]) => {
    asked.push(command)
    return {exitCode: 0, stdout: `${command.includes('--probe') ? probe : report}\n`}
  }

  return Object.assign(read, {asked})
}

function recordingLock(held = false): BuildLock & {taken: number; released: number} {
  const lock = async () => {
    if (held) return undefined
    lock.taken++
    return async () => {
      lock.released++
    }
  }

  lock.taken = 0
  lock.released = 0
  return lock
}

function recordingLog() {
  const lines: string[] = []
  const record = (level: string) => (message: string) => lines.push(`${level} ${message}`)
  return {debug: record('debug'), error: record('error'), info: record('info'), lines, warn: record('warn')}
}

/** Waits until `check` holds (the builder's work is file writes and promises); the test's own timeout bounds it. */
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 5))
}

describe('background engine build: the runner', () => {
  let folder: string
  let logDir: string
  let clock: number

  beforeEach(async () => {
    folder = await temporaryDirectory('service-auto-build-')
    logDir = join(folder, 'logs')
    clock = 1000
  })

  afterEach(async () => {
    await rm(folder, {force: true, recursive: true})
  })

  const builder = (options: {
    build?: ReturnType<typeof fakeBuild>
    lock?: BuildLock
    lockHeld?: BuildLockCheck
    read?: OutputReader
    setting?: boolean | string[]
    log?: ReturnType<typeof recordingLog>
  }) =>
    new EngineAutoBuilder([plan(folder)], {
      lock: options.lock ?? recordingLock(),
      lockHeld: options.lockHeld,
      log: options.log ?? recordingLog(),
      logDir,
      now: () => clock,
      readOutput: options.read ?? answers('{"wanted":true,"reason":"prebuilt CPU binaries"}'),
      setting: options.setting ?? true,
      startBuild: (options.build ?? fakeBuild()).start,
    })

  it('builds under the lock when the probe wants it, reporting progress, then the binaries it left, in its status, its shared file and the log', async () => {
    const build = fakeBuild()
    const lock = recordingLock()
    const log = recordingLog()
    const read = answers('{"wanted":true,"reason":"prebuilt CPU binaries"}')
    const auto = builder({build, lock, log, read})
    expect(await auto.status('LLAMA.CPP')).to.deep.equal({engine: 'llama.cpp', state: 'checking'})
    auto.start()
    await until(() => build.started.length > 0)
    expect(build.started).to.deep.equal([COMMAND])
    expect(lock.taken).to.equal(1)
    build.print('Cloning llama.cpp', '[ 55%] Building CXX object src/llama.cpp.o')
    expect(await auto.status('llama.cpp')).to.deep.include({lines: 2, percent: 55, pid: 4242, stage: 'compiling', started: 1000, state: 'building'})
    clock = 601_000
    build.exit(0)
    await until(async () => (await auto.status('llama.cpp')).state === 'succeeded')
    const done = await auto.status('llama.cpp')
    expect(done).to.deep.include({binaries: 'Models launched now use the local build of llama.cpp (CPU).', finished: 601_000, percent: 100, state: 'succeeded'})
    expect(read.asked).to.deep.equal([PROBE, REPORT])
    await auto.dispose()
    expect(lock.released).to.equal(1)
    expect(JSON.parse(await readFile(join(folder, 'service-auto-build.json'), 'utf8'))).to.deep.include({state: 'succeeded'})
    expect(await readFile(join(logDir, 'engine-build-llama.cpp.log'), 'utf8')).to.equal('Cloning llama.cpp\n[ 55%] Building CXX object src/llama.cpp.o\n')
    expect(log.lines.some((line) => line.startsWith('info llama.cpp: building it for this machine in the background at low priority (pid 4242), as prebuilt CPU binaries.') && line.endsWith('--no-auto-build or SERVICE_AUTO_BUILD=0 turns it off.'))).to.equal(true)
    expect(log.lines).to.include('info llama.cpp: background build 55% (compiling)')
    expect(log.lines).to.include('info llama.cpp: built for this machine in the background in 10m 0s. Models launched now use the local build of llama.cpp (CPU).')
  })

  it('builds nothing when the probe says a build would not help', async () => {
    const build = fakeBuild()
    const auto = builder({build, read: answers('{"wanted":false,"reason":"models launched now already use the local build of llama.cpp."}')})
    auto.start()
    await auto.dispose()
    expect(build.started).to.deep.equal([])
    expect(await auto.status('llama.cpp')).to.deep.equal({engine: 'llama.cpp', reason: 'models launched now already use the local build of llama.cpp.', state: 'not_needed'})
  })

  it('neither probes nor builds when turned off', async () => {
    const build = fakeBuild()
    const lock = recordingLock()
    const read = answers('{}')
    const auto = builder({build, lock, read, setting: false})
    auto.start()
    await auto.dispose()
    expect([build.started, read.asked, lock.taken]).to.deep.equal([[], [], 0])
    expect((await auto.status('llama.cpp')).state).to.equal('off')
  })

  it("leaves the build to the service holding the lock, and reports that one's shared status", async () => {
    const build = fakeBuild()
    const read = answers('{"wanted":true,"reason":"x"}')
    const auto = builder({build, lock: recordingLock(true), read})
    auto.start()
    await auto.dispose()
    expect([build.started, read.asked]).to.deep.equal([[], []])
    expect(await auto.status('llama.cpp')).to.deep.include({state: 'building'})
    const theirs = {engine: 'llama.cpp', percent: 31, pid: 999, stage: 'compiling', state: 'building'}
    await import('node:fs/promises').then(({writeFile}) => writeFile(join(folder, 'service-auto-build.json'), JSON.stringify(theirs)))
    expect(await auto.status('llama.cpp')).to.deep.equal(theirs)
  })

  it('reports the build of a service that was killed holding the lock as failed, once the lock shows it is gone', async () => {
    let held = true
    const auto = builder({lock: recordingLock(true), lockHeld: async () => held})
    auto.start()
    await auto.dispose()
    const theirs = {engine: 'llama.cpp', lines: 231, log_file: '/home/a/logs/engine-build-llama.cpp.log', percent: 42, pid: 999, stage: 'compiling', started: 5, state: 'building'}
    await writeFile(join(folder, 'service-auto-build.json'), JSON.stringify(theirs))
    expect(await auto.status('llama.cpp'), 'its holder alive').to.deep.equal(theirs)
    held = false
    const gone = await auto.status('llama.cpp')
    expect(gone).to.deep.include({lines: 231, log_file: theirs.log_file, percent: 42, state: 'failed'})
    expect(gone.pid).to.equal(undefined)
    expect(gone.error).to.equal(
      'the service on this machine that held the build lock stopped before the build ended; the next service to start here builds it again (or `servicectl engine build llama.cpp`).',
    )
    await rm(join(folder, 'service-auto-build.json'))
    expect(await auto.status('llama.cpp'), 'killed before it wrote a status').to.deep.include({state: 'failed'})
    // A holder that ended released the lock after writing how: that is reported as it is.
    await writeFile(join(folder, 'service-auto-build.json'), JSON.stringify({...theirs, finished: 9, percent: 100, pid: undefined, state: 'succeeded'}))
    expect(await auto.status('llama.cpp')).to.deep.include({state: 'succeeded'})
  })

  it('writes its last status before releasing the lock, and its own once it holds the lock', async () => {
    const build = fakeBuild()
    const shared = join(folder, 'service-auto-build.json')
    await writeFile(shared, JSON.stringify({engine: 'llama.cpp', percent: 42, pid: 999, stage: 'compiling', state: 'building'}))
    const states: string[] = []
    const lock: BuildLock = async () => {
      states.push(JSON.parse(await readFile(shared, 'utf8')).state)
      return async () => {
        states.push(JSON.parse(await readFile(shared, 'utf8')).state)
      }
    }

    const auto = builder({build, lock})
    auto.start()
    await until(() => build.started.length > 0)
    build.exit(0)
    await until(() => states.length === 2)
    await auto.dispose()
    expect(states, 'the killed holder\'s status when taking the lock, the last one at release').to.deep.equal(['building', 'succeeded'])
  })

  it('shares how its turn ended before releasing the lock when the probe fails or the work throws, so no other service reports a crash', async () => {
    const shared = join(folder, 'service-auto-build.json')
    const atRelease = async (read: OutputReader) => {
      let state: string | undefined
      const lock: BuildLock = async () => async () => {
        state = JSON.parse(await readFile(shared, 'utf8')).state
      }
      const auto = builder({lock, read})
      auto.start()
      await auto.dispose()
      return {own: await auto.status('llama.cpp'), state}
    }

    const failedProbe = await atRelease(async () => ({exitCode: 3, stdout: ''}))
    expect(failedProbe.state).to.equal('unavailable')
    expect(failedProbe.own).to.deep.include({state: 'unavailable'})
    const thrown = await atRelease(async () => {
      throw new Error('spawn node ENOENT')
    })
    expect(thrown.state).to.equal('failed')
    expect(thrown.own).to.deep.include({error: 'spawn node ENOENT', state: 'failed'})
  })

  it('reports a failed build with its last lines, once: starting again does not retry it', async () => {
    const build = fakeBuild()
    const log = recordingLog()
    const lock = recordingLock()
    const auto = builder({build, lock, log})
    auto.start()
    await until(() => build.started.length > 0)
    build.print('[ 12%] Building C object ggml.c.o', 'ggml.c:1: error: no space left on device')
    build.exit(2)
    await until(async () => (await auto.status('llama.cpp')).state === 'failed')
    auto.start()
    await auto.dispose()
    expect(build.started).to.have.length(1)
    expect(lock.released).to.equal(1)
    const failed = await auto.status('llama.cpp')
    expect(failed).to.deep.include({error: 'exit code 2', state: 'failed'})
    expect(failed.log_tail).to.deep.equal(['[ 12%] Building C object ggml.c.o', 'ggml.c:1: error: no space left on device'])
    expect(log.lines.at(-1)).to.match(/^warn llama\.cpp: the background build failed after 0s \(exit code 2\); not retried until the next start or `servicectl engine build llama\.cpp`\. Last lines:\n\[ 12%\]/)
  })

  it('stops the build when the service stops, releasing the lock and saying why', async () => {
    const build = fakeBuild()
    const lock = recordingLock()
    const auto = builder({build, lock})
    auto.start()
    await until(() => build.started.length > 0)
    await auto.dispose()
    expect(build.stops).to.have.length(1)
    expect(lock.released).to.equal(1)
    expect(await auto.status('llama.cpp')).to.deep.include({error: 'stopped with the service that ran it; it starts again with the next service', state: 'failed'})
  })

  it('is a 404 naming the engines that have a background build for any other', async () => {
    const auto = builder({setting: false})
    try {
      await auto.status('vllm')
      expect.fail('no error')
    } catch (error) {
      expect(error).to.deep.include({message: 'engine vllm has no background build here; engines that have one: llama.cpp.', status: 404})
    }
  })
})
