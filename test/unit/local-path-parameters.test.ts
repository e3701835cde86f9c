/**
 * Launch parameters that name files on the service's machine (stable-diffusion.cpp's VAE and text encoders, vLLM's and
 * SGLang's chat template, MLX's draft model) obey SERVICE_ALLOWED_MODEL_DIRS as `file://` model URIs do: each engine's
 * command goes through the kernel's `api.files.localPath`, on real files and symlinks.
 */
import {expect} from 'chai'
import {mkdir, symlink, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {EngineDefinition, KernelApi, LoadRequest} from '../../src/kernel/contracts.js'
import type {ExternalLaunchContext} from '../../src/kernel/external-engine.js'

import {createKernelApi} from '../../src/kernel/kernel.js'
import registerMlx from '../../plugins/engine-mlx/src/register.js'
import registerSglang from '../../plugins/engine-sglang/src/register.js'
import registerStableDiffusion from '../../plugins/engine-stable-diffusion-cpp/src/register.js'
import registerVllm from '../../plugins/engine-vllm/src/register.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
type Register = typeof registerVllm

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => expect.fail('the path was accepted'),
    (error) => error as {message: string; param: string; status: number},
  )

describe('launch parameters naming files on this machine', () => {
  let allowed: string
  let elsewhere: string

  before(async () => {
    allowed = await temporaryDirectory()
    elsewhere = await temporaryDirectory()
    await writeFile(join(allowed, 'ae.safetensors'), 'weights')
    await writeFile(join(elsewhere, 'secret.jinja'), '{{ messages }}')
    await mkdir(join(allowed, 'draft'))
    await mkdir(join(elsewhere, 'draft'))
    // Inside the allowed folder by name, elsewhere once resolved.
    await symlink(join(elsewhere, 'secret.jinja'), join(allowed, 'escape.jinja'))
  })

  const api = (allowedModelDirs: string[] = []) => createKernelApi('0.0.0', quiet, {allowedModelDirs})

  describe('api.files.localPath', () => {
    it('answers the real path of a file inside the allowed folders, and anywhere when the setting is off', async () => {
      expect(await api([allowed]).files.localPath(join(allowed, 'ae.safetensors'), {param: 'vae'})).to.equal(join(allowed, 'ae.safetensors'))
      expect(await api([allowed]).files.localPath(join(allowed, 'draft'), {kind: 'folder', param: 'draft_model'})).to.equal(join(allowed, 'draft'))
      expect(await api().files.localPath(join(allowed, 'escape.jinja'), {param: 'chat_template'})).to.equal(join(elsewhere, 'secret.jinja'))
    })

    it('refuses a path outside the allowed folders, by name or through a symlink, naming the parameter and the setting', async () => {
      for (const path of [join(elsewhere, 'secret.jinja'), join(allowed, 'escape.jinja'), join(allowed, '..', 'x')]) {
        const error = await refusal(api([allowed]).files.localPath(path, {param: 'vae'}))
        expect(error.status, path).to.equal(400)
        expect(error.param, path).to.equal('vae')
        expect(error.message, path).to.contain(`vae (${path}) is outside the folders SERVICE_ALLOWED_MODEL_DIRS allows (${allowed})`)
      }
    })

    it("lets through the service's own weights cache, where a model's companion files are downloaded, when the setting is on", async () => {
      const cacheDir = await temporaryDirectory()
      await writeFile(join(cacheDir, 'clip_l.safetensors'), 'weights')
      const withCache = createKernelApi('0.0.0', quiet, {allowedModelDirs: [allowed], cacheDir})
      expect(await withCache.files.localPath(join(cacheDir, 'clip_l.safetensors'), {param: 'clip_l'})).to.equal(join(cacheDir, 'clip_l.safetensors'))
      const error = await refusal(withCache.files.localPath(join(elsewhere, 'secret.jinja'), {param: 'vae'}))
      expect(error.message).to.contain(`is outside the folders SERVICE_ALLOWED_MODEL_DIRS allows (${allowed});`)
    })

    it('refuses what is not an absolute path of an existing file (or folder) of that kind, nor a kernel pseudo-file', async () => {
      for (const [value, kind] of [['relative/ae.safetensors', 'file'], [join(allowed, 'missing'), 'file'], [join(allowed, 'draft'), 'file'], [join(allowed, 'ae.safetensors'), 'folder'], ['/proc/self/environ', 'file'], [42, 'file']] as const) {
        const error = await refusal(api().files.localPath(value, {kind, param: 'clip_l'}))
        expect(error.status).to.equal(400)
        expect(error.message).to.equal(`clip_l must be the absolute path of a ${kind} on the service's machine (got ${JSON.stringify(value)}).`)
      }
    })
  })

  describe("the engines' commands", () => {
    const engine = async (register: Register, kernelApi: KernelApi, name: string) =>
      ((await (register as unknown as (options: {api: KernelApi}) => Promise<{engines: EngineDefinition[]}>)({api: kernelApi})).engines.find((candidate) => candidate.name === name)!)
    const command = async (register: Register, name: string, parameters: Record<string, unknown>, allowedModelDirs: string[] = [allowed]) => {
      const request = {family: {model_name: 'm'}, modelPath: join(allowed, 'model'), modelType: 'LLM', modelUid: 'm', parameters} as unknown as LoadRequest
      const context = {port: 1234, python: {executable: '/usr/bin/python3'}} as unknown as ExternalLaunchContext
      return (await engine(register, api(allowedModelDirs), name)).external!.command(request, context)
    }

    it("checks stable-diffusion.cpp's companion files and gives the program their real paths", async () => {
      const error = await refusal(command(registerStableDiffusion, 'stable-diffusion.cpp', {t5xxl: join(allowed, 'escape.jinja')}))
      expect([error.status, error.param]).to.deep.equal([400, 't5xxl'])
      expect(error.message).to.contain('SERVICE_ALLOWED_MODEL_DIRS')
      const started = await command(registerStableDiffusion, 'stable-diffusion.cpp', {vae: join(allowed, 'escape.jinja')}, [])
      expect(started.args.join(' ')).to.contain(JSON.stringify(join(elsewhere, 'secret.jinja')))
    })

    it("checks vLLM's and SGLang's chat template file, not a template given inline or by a built-in name", async () => {
      for (const [register, name] of [[registerVllm, 'vllm'], [registerSglang, 'sglang']] as const) {
        const error = await refusal(command(register, name, {chat_template: join(elsewhere, 'secret.jinja')}))
        expect([error.status, error.param], name).to.deep.equal([400, 'chat_template'])
        expect(error.message).to.contain('SERVICE_ALLOWED_MODEL_DIRS')
        expect((await command(register, name, {chat_template: join(elsewhere, 'secret.jinja')}, [])).args).to.include(join(elsewhere, 'secret.jinja'))
      }

      expect((await command(registerVllm, 'vllm', {chat_template: '{{ messages }}'})).args).to.include('{{ messages }}')
      expect((await command(registerSglang, 'sglang', {chat_template: 'chatml'})).args).to.include('chatml')
    })

    it('refuses a file the launch may not read before anything downloads, in checkLaunch', async () => {
      const spec = {model_file_name_template: null, model_format: 'pytorch', model_hub: 'huggingface', model_id: 'org/m', quantization_parts: null}
      const request = (parameters: Record<string, unknown>) => ({family: {model_name: 'm'}, modelName: 'm', modelType: 'LLM', modelUid: 'm', parameters, spec}) as unknown as LoadRequest
      const cases = [
        [registerStableDiffusion, 'stable-diffusion.cpp', {vae: join(elsewhere, 'secret.jinja')}, 'vae'],
        [registerVllm, 'vllm', {chat_template: join(elsewhere, 'secret.jinja')}, 'chat_template'],
        [registerSglang, 'sglang', {chat_template: join(elsewhere, 'secret.jinja')}, 'chat_template'],
        [registerMlx, 'MLX', {draft_model: join(elsewhere, 'draft')}, 'draft_model'],
      ] as const
      for (const [register, name, parameters, param] of cases) {
        const definition = await engine(register, api([allowed]), name)
        const error = await refusal(Promise.resolve(definition.checkLaunch!(request(parameters))))
        expect([error.status, error.param], name).to.deep.equal([400, param])
        // vLLM's CPU build takes its KV cache's size where a machine has less memory free than its default asks for.
        await definition.checkLaunch!(request({cpu_kvcache_space: 1}))
      }
    })

    it('takes a relative name that exists in the working folder the programs inherit as a path, which must be absolute', async () => {
      const here = process.cwd()
      process.chdir(elsewhere)
      try {
        const template = await refusal(command(registerSglang, 'sglang', {chat_template: 'secret.jinja'}))
        expect([template.status, template.param, template.message]).to.deep.equal([400, 'chat_template', `chat_template must be the absolute path of a file on the service's machine (got "secret.jinja").`])
        const draft = await refusal(command(registerMlx, 'MLX', {draft_model: 'draft'}))
        expect([draft.status, draft.param]).to.deep.equal([400, 'draft_model'])
      } finally {
        process.chdir(here)
      }
    })

    it("checks MLX's draft model folder, not a hub repository's name", async () => {
      const error = await refusal(command(registerMlx, 'MLX', {draft_model: join(elsewhere, 'draft')}))
      expect([error.status, error.param]).to.deep.equal([400, 'draft_model'])
      expect((await command(registerMlx, 'MLX', {draft_model: join(allowed, 'draft')})).args).to.include(join(allowed, 'draft'))
      expect((await command(registerMlx, 'MLX', {draft_model: 'mlx-community/tiny-draft'})).args).to.include('mlx-community/tiny-draft')
    })
  })
})
