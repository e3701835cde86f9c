/**
 * The weights cache under `SERVICE_HOME/cache`: one folder per model version, named
 * `<model>--<size>B--<format>--<quantization>` (Xinference's model-version naming), holding the hub's files
 * under their own names and a `manifest.json` that says where they came from (hub, repo, revision, commit)
 * and what they are (size, SHA-256). The manifest is written last, so a folder with one is complete; a
 * folder without one is a download in progress or interrupted (its `.part` files), or files a person put
 * there by hand.
 */
import {existsSync} from 'node:fs'
import {readdir, readFile, rename, rm, rmdir, stat, writeFile} from 'node:fs/promises'
import {dirname, join, relative, resolve, sep} from 'node:path'

import type {ResolvedSpec} from '../kernel/catalogue.js'
import type {CachedModel} from '../protocol/cache.js'

import {NO_SIZE} from '../kernel/catalogue.js'
import {badRequest, notFound} from '../kernel/errors.js'
import {PRIVATE_FILE} from '../kernel/private-home.js'

export const MANIFEST = 'manifest.json'
const PART = '.part'

export interface ManifestFile {
  name: string
  size: number
  sha256: string | null
  url: string
}

export interface CacheManifest {
  model_version: string
  model_name: string
  model_size_in_billions: string
  model_format: string
  quantization: string
  hub: string
  repo: string
  revision: string
  commit: string | null
  files: ManifestFile[]
  downloaded_at: string
}

export type {CachedModel} from '../protocol/cache.js'

/**
 * `qwen2.5-instruct--0_5B--ggufv2--q4_0`, the same model-version naming Xinference uses; models without a size
 * (embedding, rerank) leave that part out: `bge-small-en-v1.5--ggufv2--q8_0`. A diffusers pipeline's weight variant
 * follows its quantization (`sdxl--diffusers--none@fp16`), so that its files and the plain ones never share a folder;
 * without a variant the name is as it always was, and so are the caches made before.
 */
export function cacheEntryName(modelName: string, spec: Pick<ResolvedSpec, 'model_format' | 'model_size_in_billions' | 'quantization'>, variant?: string): string {
  const size = spec.model_size_in_billions === NO_SIZE ? '' : `--${spec.model_size_in_billions}B`
  return `${modelName}${size}--${spec.model_format}--${spec.quantization}${variant ? `${VARIANT_MARK}${variant}` : ''}`
}

const VARIANT_MARK = '@'

function parseEntryName(version: string) {
  const parts = version.split('--')
  if (parts.length < 3) return undefined
  const sized = parts.length >= 4 && /^\d+(_\d+)?B$/.test(parts.at(-3)!)
  return {
    model_format: parts.at(-2)!,
    model_name: parts.slice(0, sized ? -3 : -2).join('--'),
    model_size_in_billions: sized ? parts.at(-3)!.slice(0, -1) : NO_SIZE,
    quantization: parts.at(-1)!.split(VARIANT_MARK)[0],
  }
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, {withFileTypes: true})) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await walk(path)))
    else if (entry.isFile()) out.push(path)
  }

  return out
}

export class ModelCache {
  readonly root: string

  constructor(root: string) {
    this.root = resolve(root)
  }

  /** The folder of a model version; refuses names that would point outside the cache. */
  entryDir(version: string): string {
    const dir = resolve(this.root, version)
    if (!version || version.includes('/') || version.includes('\\') || dirname(dir) !== this.root)
      throw badRequest(`"${version}" is not a model version name such as qwen2.5-instruct--0_5B--ggufv2--q4_k_m.`, 'model_version')
    return dir
  }

  /** A file of an entry, by its name in the repo (which may include folders). */
  filePath(version: string, name: string): string {
    const dir = this.entryDir(version)
    const path = resolve(dir, name)
    if (!path.startsWith(dir + sep)) throw badRequest(`the weight file name "${name}" points outside the model's cache folder.`, 'model_file_name_template')
    return path
  }

  async manifest(version: string): Promise<CacheManifest | undefined> {
    try {
      return JSON.parse(await readFile(join(this.entryDir(version), MANIFEST), 'utf8')) as CacheManifest
    } catch {
      return undefined
    }
  }

  async writeManifest(manifest: CacheManifest): Promise<void> {
    const target = join(this.entryDir(manifest.model_version), MANIFEST)
    const temporary = `${target}.${process.pid}.tmp`
    await writeFile(temporary, JSON.stringify(manifest, null, 2) + '\n', {mode: PRIVATE_FILE})
    await rename(temporary, target)
  }

  /**
   * Whether every named file is here, complete: the sizes the manifest lists when there is one, else simply
   * present. Only the local disk is consulted, so a cached model launches with no network at all.
   */
  async has(version: string, names: string[]): Promise<boolean> {
    const manifest = await this.manifest(version)
    for (const name of names) {
      const path = this.filePath(version, name)
      const info = await stat(path).catch(() => undefined)
      if (!info?.isFile()) return false
      const listed = manifest?.files.find((file) => file.name === name)
      if (listed && listed.size !== info.size) return false
    }

    return true
  }

  /** Whether a version was downloaded whole: it has a manifest, and every file the manifest lists is here at its size. */
  async complete(version: string): Promise<boolean> {
    const manifest = await this.manifest(version)
    return manifest !== undefined && (await this.has(version, manifest.files.map((file) => file.name)))
  }

  async list(): Promise<CachedModel[]> {
    if (!existsSync(this.root)) return []
    const entries = await readdir(this.root, {withFileTypes: true})
    const out: CachedModel[] = []
    for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
      const described = await this.describe(entry.name)
      if (described) out.push(described)
    }

    return out
  }

  async describe(version: string): Promise<CachedModel | undefined> {
    const dir = this.entryDir(version)
    const info = await stat(dir).catch(() => undefined)
    if (!info?.isDirectory()) return undefined
    const manifest = await this.manifest(version)
    const parsed = manifest ?? parseEntryName(version)
    const files: CachedModel['files'] = []
    let partial = 0
    for (const path of await walk(dir)) {
      const name = relative(dir, path).split(sep).join('/')
      if (name === MANIFEST || name.endsWith('.tmp')) continue
      const {size} = await stat(path)
      if (name.endsWith(PART)) partial += size
      else files.push({name, path, size})
    }

    if (files.length === 0 && partial === 0) return undefined
    const complete = manifest
      ? manifest.files.every((listed) => files.some((file) => file.name === listed.name && file.size === listed.size))
      : partial === 0 && files.length > 0
    return {
      commit: manifest?.commit ?? null,
      complete,
      downloaded_at: manifest?.downloaded_at ?? null,
      files,
      hub: manifest?.hub ?? null,
      model_format: parsed?.model_format ?? '',
      model_name: parsed?.model_name ?? version,
      model_size_in_billions: parsed?.model_size_in_billions ?? '',
      model_version: version,
      partial_bytes: partial,
      path: dir,
      quantization: parsed?.quantization ?? '',
      repo: manifest?.repo ?? null,
      revision: manifest?.revision ?? null,
      size_bytes: files.reduce((sum, file) => sum + file.size, 0),
    }
  }

  /** Deletes a version's folder; answers the paths that were deleted. */
  async remove(version: string): Promise<string[]> {
    const described = await this.describe(version)
    if (!described) throw notFound(`there is no cached model version named ${version}; \`servicectl cached\` lists them.`, 'not_found', 'model_version')
    const dir = this.entryDir(version)
    const paths = (await walk(dir)).sort()
    await rm(dir, {force: true, recursive: true})
    return paths
  }

  /** Removes the named files (and their `.part` files), then the folders they leave empty. */
  async discard(version: string, names: string[]): Promise<void> {
    const dir = this.entryDir(version)
    for (const name of names) {
      const path = this.filePath(version, name)
      await rm(path, {force: true})
      await rm(path + PART, {force: true})
      for (let folder = dirname(path); folder.startsWith(dir); folder = dirname(folder)) {
        if (!(await rmdir(folder).then(() => true, () => false))) break
      }
    }
  }
}
