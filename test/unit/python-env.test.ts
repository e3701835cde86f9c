/**
 * The pure parts of Python virtual environments: a registration's `virtualenv` checked and merged over the engine's
 * packages, the environment's name, the machine's pip configuration read for uv, the installer's commands, and
 * finding the interpreter and installer (with the programs injected).
 */
import {expect} from 'chai'

import {ServiceError} from '../../src/kernel/errors.js'
import {checkVirtualEnv, mergeVirtualEnv, projectName, pythonRequirementsProblem} from '../../src/kernel/virtualenv.js'
import {environmentName} from '../../src/python-env/environments.js'
import {installSteps} from '../../src/python-env/install-steps.js'
import {parsePipConfigList} from '../../src/python-env/pip-config.js'
import {findToolchain, type ProbeProgram, pythonVersion, PythonVersionProbe, type Toolchain} from '../../src/python-env/toolchain.js'

const paramOf = (run: () => void) => {
  try {
    run()
  } catch (error) {
    expect(error).to.be.instanceOf(ServiceError)
    return (error as ServiceError).param
  }

  throw new Error('expected a ServiceError')
}

const PIP_CONFIG_LIST = `:env:.default-timeout='180'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/elsewhere'
install.trusted-host='mirror.local'
`

describe('Python virtual environments (pure parts)', () => {
  it('merges a registration over the engine: same project replaced, sorted, sources normalised', () => {
    const merged = mergeVirtualEnv({packages: ['transformers>=4.40', 'torch==2.13.0']}, {extra_index_url: 'https://b', find_links: ['/w', '/w'], packages: ['Transformers==4.41.0', 'six']})
    expect(merged).to.deep.equal({
      extraIndexUrls: ['https://b'],
      findLinks: ['/w'],
      indexUrl: null,
      inheritPipConfig: true,
      noBuildIsolation: false,
      packages: ['six', 'torch==2.13.0', 'Transformers==4.41.0'],
      trustedHosts: [],
    })
    expect(mergeVirtualEnv({packages: ['b', 'a']}, undefined)).to.deep.equal(mergeVirtualEnv({packages: ['a']}, {packages: ['b']}))
    expect(projectName('Foo_Bar.baz [extra] >= 1')).to.equal('foo-bar-baz')
  })

  it('refuses a virtualenv that is not usable with a 400 naming the field', () => {
    expect(() => checkVirtualEnv(undefined)).not.to.throw()
    expect(() => checkVirtualEnv({inherit_pip_config: false, packages: ['six'], trusted_host: ['a'], index_url: 'https://x'})).not.to.throw()
    expect(paramOf(() => checkVirtualEnv(['six']))).to.equal('virtualenv')
    expect(paramOf(() => checkVirtualEnv({packages: 'six'}))).to.equal('virtualenv.packages')
    expect(paramOf(() => checkVirtualEnv({packages: ['-r /etc/passwd']}))).to.equal('virtualenv.packages')
    expect(paramOf(() => checkVirtualEnv({find_links: ['--no-index']}))).to.equal('virtualenv.find_links')
    expect(paramOf(() => checkVirtualEnv({index_url: 3}))).to.equal('virtualenv.index_url')
    expect(paramOf(() => checkVirtualEnv({no_build_isolation: 'yes'}))).to.equal('virtualenv.no_build_isolation')
    expect(paramOf(() => checkVirtualEnv({pakages: []}))).to.equal('virtualenv.pakages')
  })

  it("checks an engine's python declaration", () => {
    expect(pythonRequirementsProblem({packages: ['six']}, true)).to.equal(undefined)
    expect(pythonRequirementsProblem({packages: ['six']}, false)).to.contain('external programs only')
    expect(pythonRequirementsProblem({packages: 'six'}, true)).to.contain('python.packages must be a list')
  })

  it('names an environment by Python version and request, the same for the same set', () => {
    const request = mergeVirtualEnv({packages: ['six']}, {packages: ['idna']})
    expect(environmentName('3.11.7', request)).to.match(/^py3\.11\.7-[\da-f]{16}$/)
    expect(environmentName('3.11.7', request)).to.equal(environmentName('3.11.7', mergeVirtualEnv({packages: ['idna', 'six']}, undefined)))
    expect(environmentName('3.12.1', request).slice(-16)).not.to.equal(environmentName('3.11.7', request).slice(-16))
    expect(environmentName('3.11.7', request)).not.to.equal(environmentName('3.11.7', {...request, inheritPipConfig: false}))
  })

  it("reads pip's configuration with pip's precedence: a PIP_ variable, then [install], then [global]", () => {
    expect(parsePipConfigList(PIP_CONFIG_LIST)).to.deep.equal({
      constraints: ['/etc/xdg/pip/constraints.txt'],
      extraIndexUrls: ['file:///opt/pypi/simple', 'file:///opt/pypi-more/simple'],
      findLinks: ['/opt/wheels'],
      indexUrl: undefined,
      trustedHosts: ['mirror.local'],
    })
  })

  it("gives uv the inherited pip configuration as options, and leaves pip to read it itself unless told not to", () => {
    const python = {executable: '/usr/bin/python3.11', version: '3.11.7'}
    const uv: Toolchain = {installer: 'uv', python, uv: 'uv'}
    const request = mergeVirtualEnv({packages: ['six']}, {find_links: '/mine', trusted_host: 'mirror.local'})
    const inherited = parsePipConfigList(PIP_CONFIG_LIST)
    const [create, install] = installSteps(uv, request, '/env', inherited)
    expect(create.args).to.deep.equal(['venv', '--no-config', '--python', '/usr/bin/python3.11', '/env'])
    expect(install.args.join(' ')).to.equal(
      'pip install --no-config --python /env/bin/python --index-strategy unsafe-best-match --extra-index-url file:///opt/pypi/simple --extra-index-url file:///opt/pypi-more/simple --find-links /mine --find-links /opt/wheels --allow-insecure-host mirror.local --constraint /etc/xdg/pip/constraints.txt --compile-bytecode six',
    )
    // With its cache beside the environments, uv hard-links the cache's files into each one rather than copying them.
    const linked = installSteps({...uv, uvCacheDir: '/envs/.uv-cache'}, request, '/env', inherited)
    expect(linked[0].args.slice(0, 6)).to.deep.equal(['venv', '--no-config', '--cache-dir', '/envs/.uv-cache', '--link-mode', 'hardlink'])
    expect(linked[1].args.slice(0, 7)).to.deep.equal(['pip', 'install', '--no-config', '--cache-dir', '/envs/.uv-cache', '--link-mode', 'hardlink'])
    const own = installSteps(uv, mergeVirtualEnv({packages: ['six']}, {index_url: 'https://idx', inherit_pip_config: false, no_build_isolation: true}), '/env')[1]
    expect(own.args.slice(5).join(' ')).to.equal('--index-strategy unsafe-best-match --index-url https://idx --no-build-isolation --compile-bytecode six')

    const pip: Toolchain = {installer: 'pip', python}
    const [venv, pipInstall] = installSteps(pip, request, '/env')
    expect([venv.file, ...venv.args]).to.deep.equal(['/usr/bin/python3.11', '-m', 'venv', '/env'])
    expect([pipInstall.file, ...pipInstall.args].join(' ')).to.equal('/env/bin/python -m pip install --disable-pip-version-check --no-input --find-links /mine --trusted-host mirror.local six')
    expect(installSteps(pip, {...request, inheritPipConfig: false}, '/env')[1].args).to.include('--isolated')
    expect(installSteps(pip, mergeVirtualEnv({packages: []}, undefined), '/env')).to.have.length(1)
  })

  it('finds the interpreter and the installer, and says what to install when Python is missing', async () => {
    const programs = (found: Record<string, string>): ProbeProgram => async (file) => {
      if (!(file in found)) throw Object.assign(new Error(`spawn ${file} ENOENT`), {code: 'ENOENT'})
      return {exitCode: 0, stderr: '', stdout: found[file]}
    }

    const python = '/opt/python/bin/python3.11\n3.11.7\n'
    expect(await findToolchain({}, programs({python3: python, uv: 'uv 0.13.9'}))).to.deep.equal({installer: 'uv', python: {executable: '/opt/python/bin/python3.11', version: '3.11.7'}, uv: 'uv'})
    expect((await findToolchain({}, programs({python3: python}))).installer).to.equal('pip')
    // What a worker reports for the engine table: the version, or null when there is no Python 3 to make environments from.
    expect(await pythonVersion('python3', programs({python3: python}))).to.equal('3.11.7')
    expect(await pythonVersion('python3', programs({}))).to.equal(null)
    expect(await pythonVersion('python', programs({python: '/usr/bin/python\n2.7.18\n'}))).to.equal(null)
    // A service probes its Python only when first asked, once.
    let probes = 0
    const counted: ProbeProgram = (file, args) => {
      probes++
      return programs({python3: python})(file, args)
    }
    const lazily = new PythonVersionProbe('python3', counted)
    expect(probes).to.equal(0)
    expect(lazily.current).to.equal(undefined)
    expect(await lazily.settled()).to.equal('3.11.7')
    expect([lazily.current, probes]).to.deep.equal(['3.11.7', 1])
    // Without uv on PATH, one the service installs (from the interpreter found) is used; pip when it cannot.
    const installedFrom: string[] = []
    const installUv = async (from: string) => {
      installedFrom.push(from)
      return '/envs/.uv/bin/uv'
    }

    expect(await findToolchain({installUv}, programs({python3: python}))).to.deep.include({installer: 'uv', uv: '/envs/.uv/bin/uv'})
    expect(installedFrom).to.deep.equal(['/opt/python/bin/python3.11'])
    expect((await findToolchain({installUv: async () => undefined}, programs({python3: python}))).installer).to.equal('pip')
    expect((await findToolchain({installer: 'pip', installUv}, programs({python3: python}))).installer).to.equal('pip')
    expect((await findToolchain({installer: 'pip'}, programs({python3: python, uv: 'uv 0.13.9'}))).installer).to.equal('pip')
    const failure = (promise: Promise<unknown>) => promise.then(() => expect.fail('expected a failure'), (error: ServiceError) => error)
    const uvMissing = await failure(findToolchain({installer: 'uv'}, programs({python3: python})))
    expect(uvMissing.message).to.contain('no `uv` is on PATH')
    const noPython = await failure(findToolchain({python: 'python3.99'}, programs({})))
    expect(noPython).to.include({code: 'unsupported', param: 'model_engine', status: 400})
    expect(noPython.message).to.contain('`python3.99` is not on PATH').and.to.contain('apt install python3 python3-venv python3-pip')
    expect((await failure(findToolchain({installer: 'conda'}, programs({python3: python})))).message).to.contain('SERVICE_VIRTUALENV_INSTALLER is "conda"')
  })
})
