/**
 * Hub model names, as Ollama (`hf.co/{user}/{repo}:{quant}`), llama-server (`-hf`) and LM Studio take them: a
 * repository of a hub and, for GGUF repositories, the quantization to run. A name is read here, bounded before anything
 * is asked of a hub, and a repository's file listing is turned into the custom model family that launches it through
 * the same download pipeline as a catalogue model.
 *
 * The quantization is matched case-insensitively against the one each GGUF file's name carries (`…-Q4_K_M.gguf`); a
 * split GGUF (`…-00001-of-00003.gguf`) is one choice made of all its parts. Without a quantization, Q4_K_M is taken
 * when the repository has it, as Ollama and llama-server do, else the smallest file. A repository without GGUF files
 * but with safetensors is launched as a `pytorch` model by the transformers engine.
 */
import {createHash} from 'node:crypto'

import type {ModelFamily} from '../kernel/catalogue.js'
import type {HubName, RemoteFile, RepoSnapshot} from './hubs.js'

import {badRequest} from '../kernel/errors.js'

export const MAX_HUB_NAME = 256
/** A user or repository name as the hubs allow them: letters, digits, `.`, `_`, `-`, at most 96, never `..`. */
const SEGMENT = /^[A-Za-z0-9][\w.-]{0,95}$/
const QUANTIZATION = /^[A-Za-z0-9][\w.-]{0,63}$/
const HOSTS: Record<string, HubName> = {'hf.co': 'huggingface', 'huggingface.co': 'huggingface', 'modelscope.cn': 'modelscope', 'www.modelscope.cn': 'modelscope'}
const CANONICAL_HOST: Record<HubName, string> = {huggingface: 'hf.co', modelscope: 'modelscope.cn'}
/** What Ollama's users write for "whichever quantization the repository offers first". */
const NO_QUANTIZATION = 'latest'
const DEFAULT_QUANTIZATION = 'Q4_K_M'

export interface HubModelName {
  hub: HubName
  /** `user/repo`. */
  repo: string
  /** As written, when the name has one. */
  quantization?: string
}

/** Whether a model name is meant as a hub name (and so is read, and refused, as one). */
export const looksLikeHubName = (name: string) => /^[\w.-]+\.(co|cn)\//i.test(name)

/** Reads `hf.co/{user}/{repo}[:{quant}]` (or huggingface.co, modelscope.cn), refusing what could reach beyond a repository. */
export function parseHubName(name: string, param = 'model_name'): HubModelName {
  const shape = `write it as hf.co/{user}/{repo}:{quantization} (or huggingface.co/…, modelscope.cn/…)`
  if (name.length > MAX_HUB_NAME) throw badRequest(`${param} is ${name.length} characters long, longer than the ${MAX_HUB_NAME} a hub model name may be; ${shape}.`, param)
  const match = /^([^/]+)\/([^/]+)\/([^/:]+)(?::([^/:]*))?$/.exec(name)
  const hub = match ? HOSTS[match[1].toLowerCase()] : undefined
  if (!match || !hub) throw badRequest(`${param} "${name}" is not a hub model name; ${shape}.`, param)
  const [, , user, repo, quantization] = match
  for (const [what, value] of [['user', user], ['repository', repo]])
    if (!SEGMENT.test(value) || value.includes('..'))
      throw badRequest(`the ${what} in ${param} "${name}" must be letters, digits, ".", "_" or "-" (at most 96, starting with a letter or digit, no ".."); ${shape}.`, param)
  if (quantization !== undefined && !QUANTIZATION.test(quantization))
    throw badRequest(`the quantization in ${param} "${name}" must be letters, digits, ".", "_" or "-" (at most 64), such as Q4_K_M.`, param)
  const asked = quantization === undefined || quantization.toLowerCase() === NO_QUANTIZATION ? undefined : quantization
  return {hub, repo: `${user}/${repo}`, ...(asked ? {quantization: asked} : {})}
}

/** The name a model is addressed by in every API, lower-cased as the hubs treat repository names: `hf.co/user/repo:q4_k_m`. */
export function canonicalHubName({hub, quantization, repo}: HubModelName): string {
  return `${CANONICAL_HOST[hub]}/${repo}${quantization ? `:${quantization}` : ''}`.toLowerCase()
}

/**
 * The name the model is registered under, which is also its uid when free: `user--repo--Q4_K_M` (with `ms--` before it
 * from ModelScope), shortened with a hash of the whole to the 100 characters a uid may have.
 */
export function registrationName({hub, quantization, repo}: HubModelName & {quantization: string}): string {
  const name = `${hub === 'modelscope' ? 'ms--' : ''}${repo.replace('/', '--')}--${quantization}`
  return name.length <= 100 ? name : `${name.slice(0, 90)}-${createHash('sha256').update(name).digest('hex').slice(0, 9)}`
}

/** One thing the repository offers to launch: a GGUF file, the parts of a split GGUF, or its safetensors weights. */
export interface HubChoice {
  quantization: string
  format: 'ggufv2' | 'pytorch'
  files: RemoteFile[]
  bytes: number
}

const QUANTIZATION_IN_NAME = /(?:^|[-._/])((?:UD-)?(?:I?Q[1-8](?:_[0-9A-Z]+)*|B?F16|F32|FP16|FP32|MXFP4(?:_MOE)?|TQ[12]_0))(?=[-._/]|$)/gi
const SPLIT = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i

/** The quantization a GGUF file's name carries (the last one in it), in capitals as the hubs show it, else its name without `.gguf`. */
function quantizationOf(path: string): string {
  const stem = path.split('/').at(-1)!.replace(/\.gguf$/i, '').replace(/-\d{5}-of-\d{5}$/, '')
  return [...stem.matchAll(QUANTIZATION_IN_NAME)].at(-1)?.[1].toUpperCase() ?? stem
}

/** The GGUF files of a listing, a split set as one choice of all its parts; vision projectors (mmproj) are left out. */
export function ggufChoices(snapshot: RepoSnapshot): HubChoice[] {
  const groups = new Map<string, RemoteFile[]>()
  for (const file of snapshot.files.values()) {
    if (!/\.gguf$/i.test(file.path) || /mmproj/i.test(file.path)) continue
    const split = SPLIT.exec(file.path)
    const key = split ? `${split[1]}\0${split[3]}` : file.path
    groups.set(key, [...(groups.get(key) ?? []), file])
  }

  const choices: HubChoice[] = []
  for (const [key, files] of groups) {
    const parts = Number(key.split('\0')[1] ?? 1)
    // A split set missing a part cannot be loaded; it is not offered.
    if (files.length !== parts) continue
    files.sort((a, b) => a.path.localeCompare(b.path))
    choices.push({bytes: files.reduce((sum, file) => sum + file.size, 0), files, format: 'ggufv2', quantization: quantizationOf(files[0].path)})
  }

  return choices.sort((a, b) => a.bytes - b.bytes || a.files[0].path.localeCompare(b.files[0].path))
}

/** The choice a name asks for, or a 400 listing what the repository has. */
export function pickChoice(snapshot: RepoSnapshot, name: HubModelName, param = 'model_name'): HubChoice {
  const ggufs = ggufChoices(snapshot)
  const where = `${canonicalHubName({...name, quantization: undefined})}`
  if (ggufs.length === 0) {
    const weights = [...snapshot.files.values()].filter((file) => !file.path.includes('/') && /\.safetensors$/i.test(file.path))
    if (weights.length > 0 && !name.quantization) return {bytes: weights.reduce((sum, file) => sum + file.size, 0), files: weights, format: 'pytorch', quantization: 'none'}
    if (weights.length > 0)
      throw badRequest(`${where} has safetensors weights and no GGUF files, so it has no quantization "${name.quantization}" to choose; launch ${where} without ":${name.quantization}".`, param)
    throw badRequest(`${where} has no GGUF files and no safetensors weights at its top level, so there is nothing to launch from it; pick a repository of GGUF files.`, param)
  }

  const listed = [...new Set(ggufs.map((choice) => choice.quantization))].join(', ')
  if (!name.quantization) return ggufs.find((choice) => choice.quantization.toUpperCase() === DEFAULT_QUANTIZATION) ?? ggufs[0]
  const wanted = name.quantization.toLowerCase()
  const token = new RegExp(`(^|[-._/])${wanted.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&')}([-._/]|$)`, 'i')
  const chosen = ggufs.find((choice) => choice.quantization.toLowerCase() === wanted) ?? ggufs.find((choice) => token.test(choice.files[0].path))
  if (!chosen) throw badRequest(`${where} has no quantization "${name.quantization}"; it has: ${listed}.`, param)
  return chosen
}

/** Bits a weight takes in a quantization, for a size when the repository's name gives none. */
function bitsPerWeight(quantization: string): number {
  const upper = quantization.toUpperCase()
  if (/F32/.test(upper)) return 32
  if (/F16/.test(upper)) return 16
  const bits = /Q([1-8])/.exec(upper)
  return bits ? Number(bits[1]) + 0.5 : 4.5
}

/** The size in billions a repository's name gives (`Qwen2.5-0.5B-…` is 0_5), if it gives one. */
export function sizeFromRepoName(repo: string): string | undefined {
  return /(?:^|[-_.])(\d{1,4}(?:\.\d{1,3})?)[Bb](?=$|[-_.])/.exec(repo.split('/')[1] ?? '')?.[1].replace('.', '_')
}

/** Billions of parameters: from the repository's name, else from the bytes at the quantization's bits. */
export function sizeInBillions(repo: string, choice: HubChoice): string {
  const named = sizeFromRepoName(repo)
  if (named) return named
  const billions = (choice.bytes * 8) / (choice.format === 'pytorch' ? 16 : bitsPerWeight(choice.quantization)) / 1e9
  return Math.max(billions, 0.0001).toPrecision(2).replace(/0+$/, '').replace(/\.$/, '').replace('.', '_')
}

/** The custom LLM family that launches `choice` of the repository, from its hub, under `modelName`. */
export function hubFamily(name: HubModelName, snapshot: RepoSnapshot, choice: HubChoice, modelName: string): ModelFamily {
  const source: Record<string, unknown> = {model_id: name.repo, quantizations: [choice.quantization]}
  const split = SPLIT.exec(choice.files[0].path)
  if (choice.format === 'ggufv2' && split && choice.files.length > 1) {
    source.model_file_name_split_template = `${split[1]}-{part}.gguf`
    source.model_file_name_template = choice.files[0].path
    source.quantization_parts = {[choice.quantization]: choice.files.map((file) => SPLIT.exec(file.path)![2] + '-of-' + split[3])}
  } else if (choice.format === 'ggufv2') source.model_file_name_template = choice.files[0].path
  if (snapshot.commit) source.model_revision = snapshot.commit
  const hubName = canonicalHubName({...name, quantization: choice.format === 'ggufv2' ? choice.quantization : undefined})
  return {
    context_length: 4096,
    hub_name: hubName,
    model_ability: ['chat', 'generate'],
    model_description: `${hubName}, launched from ${name.hub} by its name.`,
    model_lang: ['en'],
    model_name: modelName,
    model_specs: [{model_format: choice.format, model_size_in_billions: sizeInBillions(name.repo, choice), model_src: {[name.hub]: source}}],
    version: 2,
  }
}
