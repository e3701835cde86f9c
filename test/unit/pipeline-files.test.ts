/**
 * Which files of a diffusers pipeline repository a launch downloads (src/weights/pipeline.ts), against the file lists
 * of the catalogue's own repositories. The hub cannot be reached from where these tests were written, so each list is
 * the repository's file tree as its model card, the diffusers documentation and Xinference's entries describe it
 * (the `siblings` of `GET /api/models/{repo}`: paths only, sizes left out as the selection does not read them),
 * with every packaging those repositories are known to carry beside the one diffusers loads. The `model_index.json`
 * of each is the one `save_pretrained` writes for its pipeline class.
 */
import {expect} from 'chai'
import {readFileSync} from 'node:fs'

import type {ModelFamily} from '../../src/kernel/catalogue.js'
import type {RepoSnapshot} from '../../src/weights/hubs.js'

import {pipelineFiles, pipelineVariant} from '../../src/weights/pipeline.js'

const catalogue = (type: 'image' | 'video') =>
  JSON.parse(readFileSync(new URL(`../../plugins/model-${type}/catalogue/${type}-families.json`, import.meta.url), 'utf8')) as ModelFamily[]
const family = (type: 'image' | 'video', name: string) => catalogue(type).find((entry) => entry.model_name === name)!
const repoOf = (entry: ModelFamily) => (entry.model_src as {huggingface: {model_id: string}}).huggingface.model_id

function snapshot(repo: string, paths: string[]): RepoSnapshot {
  return {commit: null, files: new Map(paths.map((path) => [path, {path, sha256: null, size: 1}])), hub: 'huggingface', repo, revision: 'main'}
}

const selected = (entry: ModelFamily, paths: string[], index: Record<string, unknown>) =>
  pipelineFiles(snapshot(repoOf(entry), paths), index, pipelineVariant(entry))
    .map((file) => file.path)
    .sort()

const CLIP_TOKENIZER = ['merges.txt', 'special_tokens_map.json', 'tokenizer_config.json', 'vocab.json']
const T5_TOKENIZER = ['special_tokens_map.json', 'spiece.model', 'tokenizer.json', 'tokenizer_config.json']
const folder = (name: string, files: string[]) => files.map((file) => `${name}/${file}`)
/** A component's weights in every packaging diffusers and transformers write: plain and fp16, safetensors and .bin. */
const packagings = (name: string, stem: string) => folder(name, ['config.json', ...['', '.fp16'].flatMap((variant) => [`${stem}${variant}.safetensors`, `${stem.replace(/^model$/, 'pytorch_model')}${variant}.bin`])])

describe('diffusers pipeline files', () => {
  it('Stable Diffusion 1.5 (torch_dtype float16): the fp16 safetensors of each model, the tokenizer, scheduler and feature extractor, no checkpoints', () => {
    const sd15 = family('image', 'stable-diffusion-v1.5')
    const paths = [
      '.gitattributes', 'README.md', 'model_index.json', 'v1-5-pruned-emaonly.ckpt', 'v1-5-pruned-emaonly.safetensors', 'v1-5-pruned.ckpt', 'v1-5-pruned.safetensors', 'v1-inference.yaml',
      'feature_extractor/preprocessor_config.json', 'scheduler/scheduler_config.json', ...folder('tokenizer', CLIP_TOKENIZER),
      ...packagings('safety_checker', 'model'), ...packagings('text_encoder', 'model'), ...packagings('unet', 'diffusion_pytorch_model'), ...packagings('vae', 'diffusion_pytorch_model'),
      'unet/diffusion_pytorch_model.non_ema.bin', 'unet/diffusion_pytorch_model.non_ema.safetensors',
    ]
    const index = {
      _class_name: 'StableDiffusionPipeline', _diffusers_version: '0.6.0', feature_extractor: ['transformers', 'CLIPImageProcessor'], requires_safety_checker: true,
      safety_checker: ['stable_diffusion', 'StableDiffusionSafetyChecker'], scheduler: ['diffusers', 'PNDMScheduler'], text_encoder: ['transformers', 'CLIPTextModel'],
      tokenizer: ['transformers', 'CLIPTokenizer'], unet: ['diffusers', 'UNet2DConditionModel'], vae: ['diffusers', 'AutoencoderKL'],
    }
    expect(pipelineVariant(sd15)).to.deep.equal({name: 'fp16', required: false})
    expect(selected(sd15, paths, index)).to.deep.equal([
      'feature_extractor/preprocessor_config.json', 'model_index.json', 'safety_checker/config.json', 'safety_checker/model.fp16.safetensors', 'scheduler/scheduler_config.json',
      'text_encoder/config.json', 'text_encoder/model.fp16.safetensors', ...folder('tokenizer', CLIP_TOKENIZER),
      'unet/config.json', 'unet/diffusion_pytorch_model.fp16.safetensors', 'vae/config.json', 'vae/diffusion_pytorch_model.fp16.safetensors',
    ])
    // Without a float16 dtype the plain (float32) safetensors are taken.
    expect(selected({...sd15, default_model_config: {}}, paths, index).filter((path) => path.includes('.safetensors'))).to.deep.equal([
      'safety_checker/model.safetensors', 'text_encoder/model.safetensors', 'unet/diffusion_pytorch_model.safetensors', 'vae/diffusion_pytorch_model.safetensors',
    ])
  })

  it('SDXL base: both text encoders and tokenizers, leaving out ONNX, OpenVINO, Flax and the folders model_index.json does not name', () => {
    const sdxl = family('image', 'stable-diffusion-xl-base-1.0')
    const openvino = (name: string) => folder(name, ['model.onnx', 'model.onnx_data', 'openvino_model.bin', 'openvino_model.xml'])
    const paths = [
      '.gitattributes', '01.png', 'LICENSE.md', 'README.md', 'comparison.png', 'model_index.json', 'pipeline.png', 'sd_xl_base_1.0.safetensors', 'sd_xl_base_1.0_0.9vae.safetensors', 'sd_xl_offset_example-lora_1.0.safetensors',
      'scheduler/scheduler_config.json', ...folder('tokenizer', CLIP_TOKENIZER), ...folder('tokenizer_2', CLIP_TOKENIZER),
      ...folder('text_encoder', ['config.json', 'flax_model.msgpack', 'model.fp16.safetensors', 'model.safetensors']), ...openvino('text_encoder'),
      ...folder('text_encoder_2', ['config.json', 'flax_model.msgpack', 'model.fp16.safetensors', 'model.safetensors']), ...openvino('text_encoder_2'),
      ...folder('unet', ['config.json', 'diffusion_flax_model.msgpack', 'diffusion_pytorch_model.fp16.safetensors', 'diffusion_pytorch_model.safetensors']), ...openvino('unet'),
      ...folder('vae', ['config.json', 'diffusion_flax_model.msgpack', 'diffusion_pytorch_model.fp16.safetensors', 'diffusion_pytorch_model.safetensors']),
      ...folder('vae_1_0', ['config.json', 'diffusion_pytorch_model.fp16.safetensors', 'diffusion_pytorch_model.safetensors']), ...openvino('vae_decoder'), ...openvino('vae_encoder'),
    ]
    const index = {
      _class_name: 'StableDiffusionXLPipeline', _diffusers_version: '0.19.0.dev0', force_zeros_for_empty_prompt: true, scheduler: ['diffusers', 'EulerDiscreteScheduler'],
      text_encoder: ['transformers', 'CLIPTextModel'], text_encoder_2: ['transformers', 'CLIPTextModelWithProjection'], tokenizer: ['transformers', 'CLIPTokenizer'],
      tokenizer_2: ['transformers', 'CLIPTokenizer'], unet: ['diffusers', 'UNet2DConditionModel'], vae: ['diffusers', 'AutoencoderKL'],
    }
    expect(selected(sdxl, paths, index)).to.deep.equal([
      'model_index.json', 'scheduler/scheduler_config.json', 'text_encoder/config.json', 'text_encoder/model.fp16.safetensors', 'text_encoder_2/config.json', 'text_encoder_2/model.fp16.safetensors',
      ...folder('tokenizer', CLIP_TOKENIZER), ...folder('tokenizer_2', CLIP_TOKENIZER), 'unet/config.json', 'unet/diffusion_pytorch_model.fp16.safetensors', 'vae/config.json', 'vae/diffusion_pytorch_model.fp16.safetensors',
    ])
  })

  it('SD 3.5 medium and FLUX.1 schnell (bfloat16, no variant files): sharded T5 and transformer weights with their index, not the single-file checkpoints', () => {
    const sd35 = family('image', 'sd3.5-medium')
    expect(pipelineVariant(sd35)).to.equal(undefined)
    const sd35Paths = [
      '.gitattributes', 'LICENSE.md', 'README.md', 'SD3.5M_example_workflow.json', 'mmdit.png', 'model_index.json', 'sd3.5_medium.safetensors', 'sd3.5m_demo.jpg',
      ...folder('text_encoders', ['README.md', 'clip_g.safetensors', 'clip_l.safetensors', 't5xxl_fp16.safetensors', 't5xxl_fp8_e4m3fn.safetensors']),
      'scheduler/scheduler_config.json', ...folder('text_encoder', ['config.json', 'model.safetensors']), ...folder('text_encoder_2', ['config.json', 'model.safetensors']),
      ...folder('text_encoder_3', ['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']),
      ...folder('tokenizer', CLIP_TOKENIZER), ...folder('tokenizer_2', CLIP_TOKENIZER), ...folder('tokenizer_3', T5_TOKENIZER),
      ...folder('transformer', ['config.json', 'diffusion_pytorch_model.safetensors']), ...folder('vae', ['config.json', 'diffusion_pytorch_model.safetensors']),
    ]
    const sd35Index = {
      _class_name: 'StableDiffusion3Pipeline', feature_extractor: [null, null], image_encoder: [null, null], scheduler: ['diffusers', 'FlowMatchEulerDiscreteScheduler'],
      text_encoder: ['transformers', 'CLIPTextModelWithProjection'], text_encoder_2: ['transformers', 'CLIPTextModelWithProjection'], text_encoder_3: ['transformers', 'T5EncoderModel'],
      tokenizer: ['transformers', 'CLIPTokenizer'], tokenizer_2: ['transformers', 'CLIPTokenizer'], tokenizer_3: ['transformers', 'T5TokenizerFast'],
      transformer: ['diffusers', 'SD3Transformer2DModel'], vae: ['diffusers', 'AutoencoderKL'],
    }
    const sd35Files = selected(sd35, sd35Paths, sd35Index)
    expect(sd35Files).to.include.members(['text_encoder_3/model-00001-of-00002.safetensors', 'text_encoder_3/model-00002-of-00002.safetensors', 'text_encoder_3/model.safetensors.index.json', 'tokenizer_3/spiece.model'])
    expect(sd35Files).to.have.length(26)
    expect(sd35Files.filter((path) => !path.includes('/') || path.startsWith('text_encoders/'))).to.deep.equal(['model_index.json'])

    const flux = family('image', 'FLUX.1-schnell')
    const fluxPaths = [
      '.gitattributes', 'README.md', 'ae.safetensors', 'flux1-schnell.safetensors', 'model_index.json', 'schnell_grid.jpeg', 'scheduler/scheduler_config.json',
      ...folder('text_encoder', ['config.json', 'model.safetensors']), ...folder('text_encoder_2', ['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']),
      ...folder('tokenizer', CLIP_TOKENIZER), ...folder('tokenizer_2', T5_TOKENIZER),
      ...folder('transformer', ['config.json', ...[1, 2, 3].map((part) => `diffusion_pytorch_model-0000${part}-of-00003.safetensors`), 'diffusion_pytorch_model.safetensors.index.json']),
      ...folder('vae', ['config.json', 'diffusion_pytorch_model.safetensors']),
    ]
    const fluxIndex = {
      _class_name: 'FluxPipeline', scheduler: ['diffusers', 'FlowMatchEulerDiscreteScheduler'], text_encoder: ['transformers', 'CLIPTextModel'], text_encoder_2: ['transformers', 'T5EncoderModel'],
      tokenizer: ['transformers', 'CLIPTokenizer'], tokenizer_2: ['transformers', 'T5TokenizerFast'], transformer: ['diffusers', 'FluxTransformer2DModel'], vae: ['diffusers', 'AutoencoderKL'],
    }
    const skipped = new Set(['.gitattributes', 'README.md', 'ae.safetensors', 'flux1-schnell.safetensors', 'schnell_grid.jpeg'])
    expect(selected(flux, fluxPaths, fluxIndex)).to.deep.equal(fluxPaths.filter((path) => !skipped.has(path)).sort())
  })

  it('CogVideoX 2B and Wan 2.1 1.3B: the video pipelines\' sharded T5 encoders, transformer, VAE, tokenizer and scheduler', () => {
    const cog = family('video', 'CogVideoX-2b')
    expect(pipelineVariant(cog)).to.deep.equal({name: 'fp16', required: false})
    const cogPaths = [
      '.gitattributes', 'LICENSE', 'README.md', 'README_zh.md', 'model_index.json', 'scheduler/scheduler_config.json',
      ...folder('text_encoder', ['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']),
      ...folder('tokenizer', ['added_tokens.json', 'special_tokens_map.json', 'spiece.model', 'tokenizer_config.json']),
      ...folder('transformer', ['config.json', 'diffusion_pytorch_model.safetensors']), ...folder('vae', ['config.json', 'diffusion_pytorch_model.safetensors']),
    ]
    const cogIndex = {
      _class_name: 'CogVideoXPipeline', scheduler: ['diffusers', 'CogVideoXDDIMScheduler'], text_encoder: ['transformers', 'T5EncoderModel'], tokenizer: ['transformers', 'T5Tokenizer'],
      transformer: ['diffusers', 'CogVideoXTransformer3DModel'], vae: ['diffusers', 'AutoencoderKLCogVideoX'],
    }
    // torch_dtype float16 prefers fp16 files, and takes the plain ones of a repository that has none.
    expect(selected(cog, cogPaths, cogIndex)).to.deep.equal(cogPaths.filter((path) => path.includes('/') || path === 'model_index.json').sort())

    const wan = family('video', 'Wan2.1-1.3B')
    const shards = [1, 2, 3, 4, 5].map((part) => `model-0000${part}-of-00005.safetensors`)
    const wanPaths = [
      '.gitattributes', 'README.md', 'model_index.json', 'assets/comp_effic.png', 'examples/i2v_input.JPG', 'scheduler/scheduler_config.json',
      ...folder('text_encoder', ['config.json', ...shards, 'model.safetensors.index.json']), ...folder('tokenizer', T5_TOKENIZER),
      ...folder('transformer', ['config.json', 'diffusion_pytorch_model.safetensors']), ...folder('vae', ['config.json', 'diffusion_pytorch_model.safetensors']),
    ]
    const wanIndex = {
      _class_name: 'WanPipeline', scheduler: ['diffusers', 'UniPCMultistepScheduler'], text_encoder: ['transformers', 'UMT5EncoderModel'], tokenizer: ['transformers', 'T5TokenizerFast'],
      transformer: ['diffusers', 'WanTransformer3DModel'], vae: ['diffusers', 'AutoencoderKLWan'],
    }
    const files = pipelineFiles(snapshot(repoOf(wan), wanPaths), wanIndex, pipelineVariant(wan)).map((file) => file.path)
    expect([...files].sort()).to.deep.equal(wanPaths.filter((path) => /^(scheduler|text_encoder|tokenizer|transformer|vae)\//.test(path) || path === 'model_index.json').sort())
    // Small files first, so that an unusable repository fails before the weights download.
    const firstWeights = files.findIndex((path) => path.endsWith('.safetensors'))
    expect(files.slice(firstWeights).every((path) => path.endsWith('.safetensors'))).to.equal(true)
  })

  it('takes .bin weights where a component has no safetensors, the variant named by `variant`, and honours _ignore_files', () => {
    const entry: ModelFamily = {default_model_config: {variant: 'fp16'}, model_name: 'custom', model_src: {huggingface: {model_id: 'org/custom'}}}
    const paths = ['model_index.json', ...folder('unet', ['config.json', 'diffusion_pytorch_model.bin', 'diffusion_pytorch_model.fp16.bin']), ...packagings('vae', 'diffusion_pytorch_model')]
    const index = {_class_name: 'StableDiffusionPipeline', unet: ['diffusers', 'UNet2DConditionModel'], vae: ['diffusers', 'AutoencoderKL']}
    expect(selected(entry, paths, index)).to.deep.equal(['model_index.json', 'unet/config.json', 'unet/diffusion_pytorch_model.fp16.bin', 'vae/config.json', 'vae/diffusion_pytorch_model.fp16.safetensors'])
    const ignoring = {...index, _ignore_files: ['vae/diffusion_pytorch_model.fp16.safetensors']}
    expect(selected(entry, paths, ignoring)).to.include('vae/diffusion_pytorch_model.safetensors').and.not.include('vae/diffusion_pytorch_model.fp16.safetensors')
  })

  it('refuses a repository lacking a component\'s folder, weights or config, or the variant its registration names, naming what is missing', () => {
    const entry: ModelFamily = {model_name: 'custom', model_src: {huggingface: {model_id: 'org/custom'}}}
    const index = {_class_name: 'StableDiffusionPipeline', scheduler: ['diffusers', 'DDIMScheduler'], vae: ['diffusers', 'AutoencoderKL']}
    const failure = (paths: string[], family = entry) => {
      try {
        selected(family, paths, index)
      } catch (error) {
        return error as Error & {code: string; status: number}
      }

      throw new Error('no error')
    }

    expect(failure(['model_index.json', 'vae/config.json', 'vae/diffusion_pytorch_model.safetensors'])).to.include({
      code: 'hub_not_found',
      message: 'the repo org/custom at main lacks the folder scheduler/ of the component scheduler (DDIMScheduler) its model_index.json names.',
      status: 502,
    })
    expect(failure(['model_index.json', 'scheduler/scheduler_config.json', 'vae/config.json', 'vae/model.onnx']).message).to.equal(
      'the repo org/custom at main has no safetensors (or .bin) weights for the component vae (AutoencoderKL) in vae/ (it has: config.json, model.onnx); check model_id and model_revision.',
    )
    expect(failure(['model_index.json', 'scheduler/scheduler_config.json', 'vae/config.json']).message).to.match(/no safetensors \(or \.bin\) weights for the component vae \(AutoencoderKL\)/)
    expect(failure(['model_index.json', 'scheduler/scheduler_config.json', 'vae/diffusion_pytorch_model.safetensors']).message).to.equal('the repo org/custom at main lacks vae/config.json, the configuration of the component vae (AutoencoderKL).')
    expect(failure(['model_index.json', 'scheduler/scheduler_config.json', 'vae/config.json', 'vae/diffusion_pytorch_model.safetensors'], {...entry, default_model_config: {variant: 'fp16'}}).message).to.equal(
      'the repo org/custom at main has no weights of the variant "fp16" (default_model_config.variant); remove variant from the registration or pick a repository that has it.',
    )
  })
})
