/**
 * The npm packages as a user gets them: every workspace (the toolkit, each `plugins/*` and `packages/*`, so a new
 * plugin is covered as soon as it exists) is packed with `npm pack`, checked for what publishing needs, and the
 * tarballs are installed into empty folders with npm, third-party packages coming from npm's cache or the registry.
 * The installed `service-local` serves, the installed `servicectl` launches a model, and the official `openai`
 * client chats with it; `@service-toolkit/client`, installed alone, talks to the same service without the server's
 * dependencies.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import OpenAI from 'openai'

import {readmeBlock} from '../helpers/readme.js'
import {ROOT, type RunningService, startProgram, temporaryDirectory} from '../helpers/service.js'

interface PackedPackage {
  name: string
  version: string
  filename: string
  files: {path: string}[]
}

interface Manifest {
  name: string
  version: string
  private?: boolean
  description?: string
  license?: string
  repository?: {url?: string}
  files?: string[]
  main?: string
  bin?: Record<string, string>
  exports?: Record<string, string | {default: string}>
  dependencies?: Record<string, string>
  oclif?: {commands?: string; hooks?: Record<string, string>}
}

/** The folders of the workspaces, as package.json's `workspaces` globs (`folder/*`) name them. */
async function workspaceFolders(): Promise<string[]> {
  const {workspaces} = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {workspaces: string[]}
  const folders = await Promise.all(
    workspaces.map(async (glob) => {
      const parent = glob.replace(/\/\*$/, '')
      const entries = await readdir(join(ROOT, parent), {withFileTypes: true})
      return entries.filter((entry) => entry.isDirectory() && existsSync(join(ROOT, parent, entry.name, 'package.json'))).map((entry) => `${parent}/${entry.name}`)
    }),
  )
  return folders.flat()
}

/** The files a package needs at run time: its entry points, bins and oclif hooks and commands. */
function runtimeFiles(manifest: Manifest): string[] {
  const exported = Object.values(manifest.exports ?? {}).map((target) => (typeof target === 'string' ? target : target.default))
  const hooks = Object.values(manifest.oclif?.hooks ?? {})
  const commands = manifest.oclif?.commands ? [`${manifest.oclif.commands}/launch.js`] : []
  return [manifest.main, ...exported, ...Object.values(manifest.bin ?? {}), ...hooks, ...commands]
    .filter((path): path is string => path !== undefined)
    .map((path) => path.replace(/^\.\//, ''))
}

/**
 * onnxruntime-node's install script would fetch its CUDA binaries from a host this machine cannot reach; an install of
 * the tarballs skips it as the container build does (the CPU binaries are in its package).
 */
async function npm(args: string[], cwd: string) {
  return execa('npm', ['--no-audit', '--no-fund', '--loglevel=error', ...args], {cwd, env: {npm_config_onnxruntime_node_install: 'skip'}})
}

describe('npm packages: packed, installed from the tarballs into an empty folder, and run from there', function () {
  this.timeout(300_000)
  let folder: string
  let packed: Map<string, PackedPackage & {folder: string; manifest: Manifest}>
  let service: RunningService | undefined

  before(async () => {
    folder = await temporaryDirectory('service-packages-')
    await mkdir(join(folder, 'tarballs'))
    // `npm test` has built everything; packing again would only rebuild it (the root's prepack does for publishing).
    const {stdout} = await npm(['pack', '--workspaces', '--include-workspace-root', '--ignore-scripts', '--json', '--pack-destination', join(folder, 'tarballs')], ROOT)
    const byName = new Map((JSON.parse(stdout) as PackedPackage[]).map((entry) => [entry.name, entry]))
    packed = new Map()
    for (const workspace of ['.', ...(await workspaceFolders())]) {
      const manifest = JSON.parse(await readFile(join(ROOT, workspace, 'package.json'), 'utf8')) as Manifest
      const entry = byName.get(manifest.name)
      expect(entry, `npm pack made no tarball for ${workspace}`).to.not.equal(undefined)
      packed.set(manifest.name, {...entry!, folder: workspace, manifest})
    }
  })

  after(async () => {
    await service?.stop()
    await rm(folder, {force: true, recursive: true})
  })

  it('packs every workspace publishable: no private flag, versions in step, description, license, repository, LICENSE and every runtime file', () => {
    const rootVersion = packed.get('service-toolkit')!.version
    for (const {folder: workspace, files, manifest, version} of packed.values()) {
      const where = `${workspace}/package.json (${manifest.name})`
      const paths = new Set(files.map((file) => file.path))
      expect(manifest.private, `${where} is private: remove "private": true`).to.not.equal(true)
      expect(version, `${where} has version ${version}; every package goes out as ${rootVersion}`).to.equal(rootVersion)
      expect(manifest.description, `${where} needs a description`).to.be.a('string').and.not.equal('')
      expect(manifest.license, `${where} needs the license`).to.equal('Apache-2.0')
      expect(manifest.repository?.url, `${where} needs a repository`).to.be.a('string')
      expect(paths.has('LICENSE'), `${manifest.name}'s tarball lacks LICENSE: copy the root LICENSE into ${workspace}`).to.equal(true)
      for (const file of runtimeFiles(manifest)) expect(paths.has(file), `${manifest.name}'s tarball lacks ${file}: build, and list it in "files"`).to.equal(true)
      for (const [dependency, range] of Object.entries(manifest.dependencies ?? {})) {
        if (packed.has(dependency)) expect(range, `${where} depends on ${dependency}@${range}`).to.equal(`^${rootVersion}`)
      }
    }
  })

  it('installs the toolkit and its plugins from the tarballs, runs service-local and servicectl from there, and chats through the openai client', async () => {
    const app = join(folder, 'app')
    await mkdir(app)
    await writeFile(join(app, 'package.json'), JSON.stringify({name: 'app', private: true}))
    const server = [...packed.values()].filter(({name}) => name === 'service-toolkit' || name.startsWith('@service-toolkit/plugin-'))
    await npm(['install', '--prefer-offline', ...server.map(({filename}) => join(folder, 'tarballs', filename))], app)

    const bin = join(app, 'node_modules', '.bin')
    service = await startProgram('service-local', ['--port', '0'], {programFile: join(bin, 'service-local')})
    const servicectl = (args: string[]) => execa('npx', ['--no-install', 'servicectl', ...args, '-e', service!.url], {cwd: app, env: {NO_COLOR: '1'}, reject: false})
    const launched = await servicectl(['launch', '-n', 'tiny-random-llm', '--model-engine', 'llama.cpp'])
    expect(launched.exitCode, String(launched.stderr)).to.equal(0)
    expect(launched.stdout).to.contain('Model uid: tiny-random-llm')

    const openai = new OpenAI({apiKey: 'not-needed', baseURL: `${service.url}/v1`, maxRetries: 0})
    const reply = await openai.chat.completions.create({max_tokens: 8, messages: [{content: 'Hello!', role: 'user'}], model: 'tiny-random-llm'})
    expect(reply.choices[0].message.content).to.be.a('string').and.not.equal('')
    expect(reply.usage?.completion_tokens).to.equal(8)

    const listed = await servicectl(['list'])
    expect(listed.stdout).to.contain('tiny-random-llm')
    const plugins = JSON.parse((await execa('node', ['-e', `fetch('${service.url}/v1/cluster/plugins').then((r) => r.text()).then(console.log)`])).stdout)
    expect(JSON.stringify(plugins)).to.contain('@service-toolkit/plugin-engine-llama-cpp')
  })

  it('installs @service-toolkit/client alone, with none of the server\'s dependencies, and lists the running model with the README\'s example', async () => {
    const app = join(folder, 'client-app')
    await mkdir(app)
    await writeFile(join(app, 'package.json'), JSON.stringify({name: 'client-app', private: true, type: 'module'}))
    await npm(['install', '--prefer-offline', join(folder, 'tarballs', packed.get('@service-toolkit/client')!.filename)], app)

    const {stdout: tree} = await npm(['ls', '--all', '--parseable'], app)
    const installed = tree.split('\n').slice(1).map((path) => path.slice(join(app, 'node_modules').length + 1))
    expect(installed.sort()).to.deep.equal(['@service-toolkit/client', 'eventsource-parser'])

    const script = (await readmeBlock('client-package')).replace('http://127.0.0.1:9997', service!.url)
    const {stdout} = await execa('node', ['--input-type=module', '-e', script], {cwd: app})
    expect(JSON.parse(stdout)).to.deep.equal(['tiny-random-llm'])
  })
})
