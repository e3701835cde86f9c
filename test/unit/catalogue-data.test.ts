/**
 * The built-in catalogues are data: every family the model plugins contribute goes through the kernel as the service
 * loads it, and its specs must have the shapes the hubs and engines use, so that a typo in a repo id, a file name
 * template or a size is caught here rather than at a user's first launch.
 */
import {expect} from 'chai'

import type {ModelFamily} from '../../src/kernel/catalogue.js'
import type {PluginContribution, RegisterHook} from '../../src/kernel/hooks.js'

import piper from '../../plugins/engine-piper/src/register.js'
import stableDiffusionCpp from '../../plugins/engine-stable-diffusion-cpp/src/register.js'
import audio from '../../plugins/model-audio/src/register.js'
import embedding from '../../plugins/model-embedding/src/register.js'
import image from '../../plugins/model-image/src/register.js'
import llm from '../../plugins/model-llm/src/register.js'
import rerank from '../../plugins/model-rerank/src/register.js'
import video from '../../plugins/model-video/src/register.js'
import {flattenFamily, normalizeSize} from '../../src/kernel/catalogue.js'
import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const api = createKernelApi('0.0.0', quiet)
/** Every plugin that contributes built-in families: the model types' own catalogues and the engines' voices and tiny models. */
const hooks: Record<string, RegisterHook> = {
  'engine-piper': piper,
  'engine-stable-diffusion-cpp': stableDiffusionCpp,
  'model-audio': audio,
  'model-embedding': embedding,
  'model-image': image,
  'model-llm': llm,
  'model-rerank': rerank,
  'model-video': video,
}

/** A repo id both hubs accept (`owner/name` of letters, digits, `-`, `_`, `.`), so one catalogue id serves either hub's mirror. */
const REPO_ID = /^[A-Za-z0-9_][\w.-]{0,95}\/[A-Za-z0-9_][\w.-]{0,95}$/
/** `{quantization}` may stand in a repo id, where each quantization is its own repository. */
const TEMPLATED_REPO_ID = /^[A-Za-z0-9_][\w.-]*\/[\w.-]*(\{quantization\}[\w.-]*)?$/
const ABILITIES = new Set(['chat', 'generate', 'tools', 'vision', 'reasoning', 'hybrid'])
const LLM_FORMATS = new Set(['ggufv2', 'pytorch', 'awq', 'gptq', 'fp8', 'mlx'])
const DOWNLOAD_HUBS = new Set(['huggingface', 'modelscope'])

/** A hook as the service's plugin loader calls it, without oclif's context, which these hooks do not use. */
type Register = (options: {api: typeof api}) => Promise<PluginContribution['contribution']>

async function contributions(): Promise<PluginContribution[]> {
  return Promise.all(Object.entries(hooks).map(async ([plugin, hook]) => ({contribution: await (hook as unknown as Register)({api}), plugin})))
}

describe('built-in catalogue data', () => {
  let kernel: Kernel
  const familiesOf = (type: string): ModelFamily[] => [...(kernel.builtins.get(type)?.values() ?? [])].map((entry) => entry.family)
  const all = () => [...kernel.builtins.keys()].flatMap((type) => familiesOf(type).map((family) => ({family, type})))

  before(async () => {
    kernel = Kernel.fromContributions(api, await contributions())
  })

  it('loads every family through the kernel without a problem, and each passes its model type\'s own validation', () => {
    expect(kernel.problems).to.deep.equal([])
    for (const {family, type} of all()) expect(() => kernel.modelType(type)!.definition.validateFamily?.(family), family.model_name).to.not.throw()
  })

  it('has the breadth of Xinference\'s catalogue: at least 150 LLM, 40 embedding and 15 rerank families', () => {
    expect(familiesOf('LLM').length).to.be.at.least(150)
    expect(familiesOf('embedding').length).to.be.at.least(40)
    expect(familiesOf('rerank').length).to.be.at.least(15)
  })

  it('gives no two families the same name, across all model types and whatever the case', () => {
    const seen = new Map<string, string>()
    for (const {family, type} of all()) {
      const key = family.model_name.toLowerCase()
      expect(seen.has(key), `${family.model_name} (${type}) and ${seen.get(key)}`).to.equal(false)
      seen.set(key, `${family.model_name} (${type})`)
    }
  })

  it('names every downloaded repository owner/name and fills every file name template as its format needs', () => {
    for (const {family} of all()) {
      for (const spec of family.model_specs ?? []) {
        for (const [hub, source] of Object.entries(spec.model_src ?? {})) {
          if (!DOWNLOAD_HUBS.has(hub)) continue
          const where = `${family.model_name} ${spec.model_format} ${hub} ${source.model_id}`
          expect(source.model_id, where).to.match(TEMPLATED_REPO_ID)
          for (const quantization of source.quantizations ?? ['none'])
            expect(source.model_id!.replaceAll('{quantization}', quantization), where).to.match(REPO_ID)
          const quantizations = source.quantizations ?? []
          if (spec.model_format !== 'ggufv2') continue
          expect(source.model_file_name_template, where).to.match(/^[\w./{}-]+\.gguf$/)
          if (quantizations.length > 1) expect(source.model_file_name_template, where).to.include('{quantization}')
          if (source.quantization_parts) {
            expect(source.model_file_name_split_template, where).to.match(/\{part\}.*\.gguf$/)
            for (const split of Object.keys(source.quantization_parts)) expect(quantizations, where).to.include(split)
          }
        }
      }
    }
  })

  it('keeps LLM facts typed: known formats and abilities, sizes that parse, positive integer context lengths', () => {
    for (const family of familiesOf('LLM')) {
      expect(Number.isInteger(family.context_length) && family.context_length! > 0, `${family.model_name} context_length`).to.equal(true)
      for (const ability of family.model_ability ?? []) expect(ABILITIES.has(ability), `${family.model_name} ability ${ability}`).to.equal(true)
      for (const spec of family.model_specs ?? []) {
        expect(LLM_FORMATS.has(spec.model_format), `${family.model_name} format ${spec.model_format}`).to.equal(true)
        expect(() => normalizeSize(spec.model_size_in_billions!), `${family.model_name} size ${spec.model_size_in_billions}`).to.not.throw()
      }
    }
  })

  it('offers MLX builds only of text models, as the MLX engine serves them with mlx-lm, which cannot load vision models', () => {
    const visionWithMlx = familiesOf('LLM').filter((family) => family.model_ability?.includes('vision') && family.model_specs?.some((spec) => spec.model_format === 'mlx'))
    expect(visionWithMlx.map((family) => family.model_name)).to.deep.equal([])
  })

  it('keeps embedding and rerank limits positive integers', () => {
    for (const family of familiesOf('embedding'))
      for (const field of ['dimensions', 'max_tokens']) expect(Number.isInteger(family[field]) && (family[field] as number) > 0, `${family.model_name} ${field}`).to.equal(true)
    for (const family of familiesOf('rerank')) expect(Number.isInteger(family.max_tokens) && (family.max_tokens as number) > 0, `${family.model_name} max_tokens`).to.equal(true)
  })

  it('lists each (format, size, quantization) of a family once per hub, so a launch request matches one spec', () => {
    for (const {family} of all()) {
      const keys = flattenFamily(family).map((spec) => `${spec.model_hub} ${spec.model_format} ${spec.model_size_in_billions} ${spec.quantization}`)
      const twice = keys.filter((key, index) => keys.indexOf(key) !== index)
      expect(twice, family.model_name).to.deep.equal([])
    }
  })
})
