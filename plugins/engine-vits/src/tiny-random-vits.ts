/**
 * `tiny-random-vits`: the configuration and tokenizer of a VITS model a few hundred thousand parameters small (an
 * MMS-TTS model's, with every size shrunk) and no weights, which the engine's program builds from the config with
 * seeded random weights, as transformers builds any model from its config. It speaks noise, for trying the speech
 * route and for CI. The files are those of a Hugging Face VITS repository, in the order the catalogue names them (config.json,
 * tokenizer_config.json, vocab.json).
 */
import type {WeightsGenerationRequest} from 'service-toolkit'

import {writeFile} from 'node:fs/promises'

/** MMS-TTS English's characters, the first being the padding token. */
const CHARACTERS = [..."_abcdefghijklmnopqrstuvwxyz '.,?!-"]

const CONFIG = {
  architectures: ['VitsModel'],
  duration_predictor_filter_channels: 32,
  duration_predictor_num_flows: 2,
  ffn_dim: 64,
  flow_size: 16,
  hidden_size: 32,
  model_type: 'vits',
  num_attention_heads: 2,
  num_hidden_layers: 2,
  // Two speakers: the catalogue entry's two voices.
  num_speakers: 2,
  posterior_encoder_num_wavenet_layers: 2,
  prior_encoder_num_flows: 2,
  prior_encoder_num_wavenet_layers: 2,
  resblock_dilation_sizes: [[1, 3, 5]],
  resblock_kernel_sizes: [3],
  sampling_rate: 16_000,
  spectrogram_bins: 65,
  speaker_embedding_size: 16,
  upsample_initial_channel: 32,
  upsample_kernel_sizes: [16, 16, 8],
  upsample_rates: [8, 8, 4],
  vocab_size: CHARACTERS.length,
}

const TOKENIZER_CONFIG = {add_blank: true, is_uroman: false, language: 'eng', normalize: true, pad_token: '_', phonemize: false, tokenizer_class: 'VitsTokenizer', unk_token: '_'}

const FILES: Record<string, unknown> = {
  'config.json': CONFIG,
  'tokenizer_config.json': TOKENIZER_CONFIG,
  'vocab.json': Object.fromEntries(CHARACTERS.map((character, id) => [character, id])),
}

export const RECIPE_NAMES = ['tiny-random-vits']

export async function generateRecipe({files, recipe, signal}: WeightsGenerationRequest): Promise<void> {
  if (recipe !== 'tiny-random-vits') throw new Error(`no VITS recipe named "${recipe}"; there is: ${RECIPE_NAMES.join(', ')}`)
  const contents = Object.values(FILES)
  if (files.length !== contents.length) throw new Error(`the VITS recipe makes ${Object.keys(FILES).join(', ')}, and ${files.length} files were asked for`)
  signal.throwIfAborted()
  await Promise.all(files.map((file, index) => writeFile(file, JSON.stringify(contents[index], null, 2))))
}
