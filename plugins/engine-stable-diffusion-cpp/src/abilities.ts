/**
 * What a model can do on stable-diffusion.cpp, from its GGUF file's tensor names (read from the header alone, by
 * node-llama-cpp's GGUF reader, which the service installs for llama.cpp anyway). Every model makes images from text;
 * editing (image2image) and repainting under a mask (inpainting) start from the picture's latent, so they need the
 * VAE's encoder: a whole model's file may hold only the decoder, and a diffusion-only file gets both halves from the
 * `vae` file given beside it (FLUX's ae.safetensors and SD 3.5's VAE are published whole).
 */
import type {ImageAbility} from 'service-toolkit'

const VAE_ENCODER = /^(first_stage_model|vae)\.encoder\./

export async function abilitiesOf(modelPath: string, vae: unknown): Promise<ImageAbility[]> {
  return vae !== undefined || (await holdsVaeEncoder(modelPath)) ? ['text2image', 'image2image', 'inpainting'] : ['text2image']
}

/** A header this reader cannot read counts as none: the program's own reader and sd.cpp say what is wrong at load. */
async function holdsVaeEncoder(path: string): Promise<boolean> {
  // Loaded at a launch only: node-llama-cpp is large, and the service loads every plugin when it starts.
  const {readGgufFileInfo} = await import('node-llama-cpp')
  const info = await readGgufFileInfo(path, {logWarnings: false, sourceType: 'filesystem'}).catch(() => undefined)
  return info?.fullTensorInfo?.some(({name}) => VAE_ENCODER.test(name)) ?? false
}
