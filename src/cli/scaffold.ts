/**
 * Creates a new plugin from one of the templates in `templates/`: plain ESM JavaScript with JSDoc types, so
 * that `servicectl plugins link <dir>` works on the result with no build step. Every text file is copied
 * with its placeholders filled in; an existing non-empty directory is never written into.
 */
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, stat, writeFile} from 'node:fs/promises'
import {join, relative, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

export const PLUGIN_KINDS = ['engine', 'external-engine', 'model-type'] as const
export type PluginKind = (typeof PLUGIN_KINDS)[number]

/** The kernel's rule for engine and model type names (see kernel.ts), with a length a person can type. */
const NAME = /^[A-Za-z0-9][\w.-]*$/
const MAX_NAME_LENGTH = 50

/** `external-engine`: an engine whose models run as a program of their own (a Python server) instead of a Node module. */
const TEMPLATE_OF: Record<PluginKind, string> = {engine: 'engine-plugin', 'external-engine': 'engine-external-plugin', 'model-type': 'model-type-plugin'}
const PACKAGE_PREFIX: Record<PluginKind, string> = {engine: 'service-toolkit-plugin-engine-', 'external-engine': 'service-toolkit-plugin-engine-', 'model-type': 'service-toolkit-plugin-model-'}
const NAME_PLACEHOLDER: Record<PluginKind, string> = {engine: '__ENGINE_NAME__', 'external-engine': '__ENGINE_NAME__', 'model-type': '__MODEL_TYPE__'}

export const isEngineKind = (kind: PluginKind) => kind !== 'model-type'

const TOOLKIT_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** A mistake the person running the scaffolder can fix; its message is meant to be shown as it is. */
export class ScaffoldError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ScaffoldError'
  }
}

export interface ScaffoldOptions {
  kind: PluginKind
  /** The engine or model type name, as users will type it (`--model-engine`, `-t`). */
  name: string
  /** Where to create the plugin; default `./<package name>` under `cwd`. */
  directory?: string
  cwd?: string
  /** Directory holding `engine-plugin/` and `model-type-plugin/`; default the toolkit's `templates/`. */
  templates?: string
  /** The toolkit's type declarations, for the plugin's jsconfig.json; default the toolkit's `dist/index.d.ts`. */
  toolkitTypes?: string
}

export interface ScaffoldResult {
  kind: PluginKind
  name: string
  /** Lower-case form of the name used in the package name, route paths, formats and demo model names. */
  slug: string
  packageName: string
  directory: string
  /** Files written, relative to `directory`. */
  files: string[]
}

/** `Llama.CPP_2` → `llama-cpp-2`: safe in npm package names, URL paths and model names. */
export function slugOf(name: string): string {
  return name
    .toLowerCase()
    .replaceAll(/[^a-z0-9]+/g, '-')
    .replaceAll(/^-+|-+$/g, '')
}

/** Throws a ScaffoldError saying what is wrong with `name`, or returns its slug. */
export function validateName(kind: PluginKind, name: string): string {
  const what = isEngineKind(kind) ? 'engine name' : 'model type name'
  if (!NAME.test(name) || name.length > MAX_NAME_LENGTH)
    throw new ScaffoldError(
      `"${name}" is not a valid ${what}: use up to ${MAX_NAME_LENGTH} letters, digits, ".", "_" or "-", starting with a letter or digit (for example ${isEngineKind(kind) ? 'my-engine' : 'classifier'}).`,
    )
  const slug = slugOf(name)
  if (!slug) throw new ScaffoldError(`"${name}" is not a valid ${what}: it needs at least one letter or digit.`)
  return slug
}

async function listFiles(root: string, directory = root): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(directory, {withFileTypes: true})) {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) out.push(...(await listFiles(root, path)))
    else if (entry.isFile()) out.push(relative(root, path))
  }

  return out.sort()
}

async function checkTarget(directory: string): Promise<void> {
  if (!existsSync(directory)) return
  if (!(await stat(directory)).isDirectory()) throw new ScaffoldError(`${directory} already exists and is not a directory; choose another --dir.`)
  const entries = await readdir(directory)
  if (entries.length > 0)
    throw new ScaffoldError(
      `${directory} already exists and is not empty (${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}); choose another --dir, or remove it first. Nothing was written.`,
    )
}

export async function scaffoldPlugin(options: ScaffoldOptions): Promise<ScaffoldResult> {
  const {kind, name} = options
  if (!PLUGIN_KINDS.includes(kind)) throw new ScaffoldError(`unknown plugin kind "${kind}"; choose one of: ${PLUGIN_KINDS.join(', ')}.`)
  const slug = validateName(kind, name)
  const packageName = `${PACKAGE_PREFIX[kind]}${slug}`
  const directory = resolve(options.cwd ?? process.cwd(), options.directory ?? packageName)
  const template = join(options.templates ?? join(TOOLKIT_ROOT, 'templates'), TEMPLATE_OF[kind])
  if (!existsSync(template)) throw new Error(`the ${kind} plugin template is missing at ${template}; the toolkit's installation is incomplete.`)
  await checkTarget(directory)

  const values: Record<string, string> = {
    [NAME_PLACEHOLDER[kind]]: name,
    __PLUGIN_NAME__: packageName,
    __SLUG__: slug,
    // Forward slashes: the path goes into JSON, and TypeScript reads them on every platform.
    __TOOLKIT_TYPES__: (options.toolkitTypes ?? join(TOOLKIT_ROOT, 'dist', 'index.d.ts')).replaceAll('\\', '/'),
  }
  const fill = (file: string, text: string) => {
    let out = text
    for (const [placeholder, value] of Object.entries(values)) out = out.replaceAll(placeholder, value)
    const left = /__[A-Z][A-Z_]*__/.exec(out)
    if (left) throw new Error(`the ${kind} plugin template's ${file} has the placeholder ${left[0]}, which the scaffolder does not fill.`)
    return out
  }

  const files = await listFiles(template)
  // Read and fill everything first, so that a broken template fails before anything is written.
  const contents = await Promise.all(files.map(async (file) => fill(file, await readFile(join(template, file), 'utf8'))))
  await mkdir(directory, {recursive: true})
  for (const [index, file] of files.entries()) {
    const target = join(directory, file)
    await mkdir(join(target, '..'), {recursive: true})
    // `wx`: never overwrite, even if something appeared in the directory since it was checked.
    await writeFile(target, contents[index], {flag: 'wx'})
  }

  return {directory, files, kind, name, packageName, slug}
}
