/**
 * Companion files (src/kernel/companions.ts, src/weights/companions.ts): an image family's `gguf_companion_files` carried
 * to its GGUF specs, a registration's mistakes refused naming the field, and the files downloaded from the local hub
 * through the weight store into entries of their own, shared between models, with a launch parameter that names a
 * file keeping its companion from being fetched at all.
 */
import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {CompanionFile} from '../../src/kernel/companions.js'

import {flattenFamily, type ResolvedSpec} from '../../src/kernel/catalogue.js'
import {ServiceError} from '../../src/kernel/errors.js'
import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'
import {mediaKit} from '../../src/kernel/media-kit.js'
import {ModelRegistry} from '../../src/kernel/registry.js'
import {withCompanions} from '../../src/weights/companions.js'
import {WeightStore} from '../../src/weights/store.js'
import {FakeHub} from '../helpers/fake-hub.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const COMPANIONS: CompanionFile[] = [
  {file_name: 'ae.safetensors', model_id: 'test-org/flux', model_revision: null, role: 'vae'},
  {file_name: 'text_encoders/clip_l.safetensors', model_id: 'test-org/encoders', role: 'clip_l'},
]

describe('companion files', () => {
  const family = (companions: unknown) => ({
    model_name: 'flux',
    model_src: {huggingface: {gguf_companion_files: companions, gguf_model_file_name_template: 'flux-{quantization}.gguf', gguf_model_id: 'city96/flux-gguf', gguf_quantizations: ['Q4_0'], model_id: 'bfl/flux'}},
  })

  it("carries an image family's gguf_companion_files to its GGUF specs only", () => {
    const specs = flattenFamily(mediaKit.normalizeFamily(family(COMPANIONS)))
    expect(specs.map((spec) => [spec.model_format, spec.companion_files])).to.deep.equal([
      ['diffusers', undefined],
      ['ggufv2', COMPANIONS],
    ])
  })

  it('refuses a registration whose companion files are malformed, naming the field', () => {
    const validate = (companions: unknown) => () => mediaKit.validateFamily(family(companions), ['text2image'])
    const param = 'model_src.huggingface.gguf_companion_files'
    expect(validate({role: 'vae'})).to.throw(ServiceError, /must be a list of \{role, model_id, file_name/).with.property('param', param)
    expect(validate([{model_id: 'a/b', role: 'vae'}])).to.throw(ServiceError, /gguf_companion_files\[0\] needs file_name/).with.property('param', param)
    expect(validate([COMPANIONS[0], {...COMPANIONS[1], role: 'vae'}])).to.throw(ServiceError, /names the role vae twice/).with.property('param', param)
    expect(validate(COMPANIONS)).to.not.throw()
  })

  it('refuses malformed companion files in a registration of model_specs, on the spec or a hub source, naming the field', async () => {
    const kernel = Kernel.fromContributions(createKernelApi('0.0.0', quiet), [
      {contribution: {modelTypes: [{defaultAbilities: ['chat'], description: 'LLM', name: 'LLM'}]}, plugin: 'core'},
    ])
    const registry = new ModelRegistry(kernel, join(await temporaryDirectory(), 'registrations'), quiet)
    const register = (spec: Record<string, unknown>) =>
      registry.register('LLM', {model_ability: ['chat'], model_name: 'mine', model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1, quantization: 'q4_0', ...spec}]}, {persist: false}).then(
        () => undefined,
        (error: ServiceError) => [error.status, error.param, error.message],
      )
    const source = (companions: unknown) => ({model_src: {huggingface: {companion_files: companions, model_file_name_template: 'm.gguf', model_id: 'org/m'}}})
    expect(await register(source({}))).to.deep.equal([
      400,
      'model_specs[0].model_src.huggingface.companion_files',
      'model_specs[0].model_src.huggingface.companion_files must be a list of {role, model_id, file_name, model_revision?}.',
    ])
    expect(await register(source([{}]))).to.include('model_specs[0].model_src.huggingface.companion_files')
    expect(await register({companion_files: [{model_id: 'a/b', role: 'vae'}], model_file_name_template: 'm.gguf', model_hub: 'huggingface', model_id: 'org/m'})).to.deep.equal([
      400,
      'model_specs[0].companion_files',
      "model_specs[0].companion_files[0] needs file_name (text): the launch parameter it fills, the repository and the file's path in it.",
    ])
    expect(await register(source(COMPANIONS))).to.equal(undefined)
  })

  describe('downloads', () => {
    let hub: FakeHub
    let directory: string
    const spec = {companion_files: COMPANIONS, model_hub: 'huggingface'} as ResolvedSpec
    const fetched = () => hub.fileRequests().map((request) => new URL(request.url, hub.url).searchParams.get('file'))

    before(async () => {
      directory = await temporaryDirectory()
      await writeFile(join(directory, 'ae'), 'a VAE\n')
      await writeFile(join(directory, 'clip'), 'a text encoder\n')
      hub = await FakeHub.start()
      await hub.addRepo('test-org/flux', {'ae.safetensors': join(directory, 'ae'), 'flux-Q4_0.gguf': join(directory, 'ae')})
      await hub.addRepo('test-org/encoders', {'text_encoders/clip_l.safetensors': join(directory, 'clip'), 'text_encoders/t5xxl.safetensors': join(directory, 'clip')})
    })

    after(async () => hub?.stop())

    const store = () => new WeightStore({cacheDir: join(directory, 'cache'), env: {HF_ENDPOINT: hub.url}, log: quiet})

    it('fetches each into an entry of its own, once, and adds its path as the parameter its role names', async () => {
      const progress: string[] = []
      const parameters = await withCompanions(store(), spec, {cpu_threads: 2}, {onProgress: (download) => progress.push(download.repo)})
      expect(parameters).to.deep.equal({
        clip_l: join(directory, 'cache', 'test-org--encoders--text_encoders--clip_l--safetensors--none', 'text_encoders', 'clip_l.safetensors'),
        cpu_threads: 2,
        vae: join(directory, 'cache', 'test-org--flux--ae--safetensors--none', 'ae.safetensors'),
      })
      expect(fetched()).to.deep.equal(['ae.safetensors', 'text_encoders/clip_l.safetensors'])
      expect([...new Set(progress)]).to.deep.equal(['test-org/flux', 'test-org/encoders'])

      // Another model naming the same files finds them in the cache.
      expect(await withCompanions(store(), spec, {}, {})).to.deep.equal({clip_l: parameters.clip_l, vae: parameters.vae})
      expect(fetched()).to.have.length(2)
    })

    it('keeps a parameter the launch names and does not fetch its companion', async () => {
      const before = hub.requests.length
      const parameters = await withCompanions(new WeightStore({cacheDir: join(directory, 'other-cache'), env: {HF_ENDPOINT: hub.url}, log: quiet}), spec, {vae: '/models/my-vae.safetensors'}, {})
      expect(parameters.vae).to.equal('/models/my-vae.safetensors')
      expect(parameters.clip_l).to.match(/other-cache/)
      expect(hub.requests.slice(before).map((request) => request.url).join(' ')).to.not.include('ae.safetensors')
    })
  })
})
