/**
 * The commands that make one environment, as data: with uv, `uv venv` then `uv pip install`, the inherited pip
 * configuration given as uv options; with pip, `python -m venv` then the environment's own `pip install`, which
 * reads the machine's pip configuration itself unless told to ignore it (`--isolated`).
 */
import type {PythonEnvRequest} from '../kernel/virtualenv.js'
import type {PipSources} from './pip-config.js'
import type {Toolchain} from './toolchain.js'

import {join} from 'node:path'

export interface InstallStep {
  /** What the step does, for the log and for a failure's reason. */
  title: string
  file: string
  args: string[]
}

const each = (option: string, values: readonly string[]) => [...new Set(values)].flatMap((value) => [option, value])

/** The request's own package sources, as pip and uv both spell them (uv calls a trusted host an insecure one). */
function sourceOptions(request: PythonEnvRequest, inherited: PipSources | undefined, trustedHostOption: string): string[] {
  const indexUrl = request.indexUrl ?? inherited?.indexUrl
  return [
    ...(indexUrl ? ['--index-url', indexUrl] : []),
    ...each('--extra-index-url', [...request.extraIndexUrls, ...(inherited?.extraIndexUrls ?? [])]),
    ...each('--find-links', [...request.findLinks, ...(inherited?.findLinks ?? [])]),
    ...each(trustedHostOption, [...request.trustedHosts, ...(inherited?.trustedHosts ?? [])]),
    ...each('--constraint', inherited?.constraints ?? []),
  ]
}

/**
 * The steps that make the environment at `envDir`. `inherited` is the machine's pip configuration, read for uv
 * only (pip reads it itself), and only when the request inherits it.
 */
export function installSteps(toolchain: Toolchain, request: PythonEnvRequest, envDir: string, inherited?: PipSources): InstallStep[] {
  const python = join(envDir, 'bin', 'python')
  const packages = request.packages
  if (toolchain.installer === 'uv') {
    // Hard links, not copies, from uv's cache: every environment with torch holds the same files once.
    const cache = toolchain.uvCacheDir ? ['--cache-dir', toolchain.uvCacheDir, '--link-mode', 'hardlink'] : []
    const create: InstallStep = {args: ['venv', '--no-config', ...cache, '--python', toolchain.python.executable, envDir], file: toolchain.uv ?? 'uv', title: 'uv venv'}
    if (packages.length === 0) return [create]
    const args = [
      'pip',
      'install',
      '--no-config',
      ...cache,
      '--python',
      python,
      // pip takes the best version across every index and folder; uv only does when asked.
      '--index-strategy',
      'unsafe-best-match',
      ...sourceOptions(request, request.inheritPipConfig ? inherited : undefined, '--allow-insecure-host'),
      ...(request.noBuildIsolation ? ['--no-build-isolation'] : []),
      // pip compiles every module at install, uv only when asked: without bytecode each model process compiles torch
      // and transformers again (twice the CPU of their import) when PYTHONDONTWRITEBYTECODE is set, as images often do.
      '--compile-bytecode',
      ...packages,
    ]
    return [create, {args, file: toolchain.uv ?? 'uv', title: 'uv pip install'}]
  }

  const create: InstallStep = {args: ['-m', 'venv', envDir], file: toolchain.python.executable, title: 'python -m venv'}
  if (packages.length === 0) return [create]
  const args = [
    '-m',
    'pip',
    'install',
    ...(request.inheritPipConfig ? [] : ['--isolated']),
    '--disable-pip-version-check',
    '--no-input',
    ...sourceOptions(request, undefined, '--trusted-host'),
    ...(request.noBuildIsolation ? ['--no-build-isolation'] : []),
    ...packages,
  ]
  return [create, {args, file: python, title: 'pip install'}]
}

/**
 * Compiles every module of an environment made before installs compiled them. What compile_dir answers is left out of
 * the exit code: it is false when any file fails to compile (templates in Python 2 syntax some packages ship), files
 * the environment never imports.
 */
export function bytecodeStep(envDir: string): InstallStep {
  const compile = 'import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0)'
  return {args: ['-c', compile, join(envDir, 'lib')], file: join(envDir, 'bin', 'python'), title: 'compile bytecode'}
}
