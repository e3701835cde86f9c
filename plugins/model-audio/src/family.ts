/**
 * Xinference's audio family format: `model_family` (whisper, …), `model_ability` a subset of audio2text and
 * text2audio, `multilingual`, `language` and `default_transcription_config` (options every transcription of the model
 * starts from), and our `voices` (a text2audio model's voice names, by speaker id), besides the model specs every type has.
 */
import type {KernelApi, ModelFamily} from 'service-toolkit'

import {isLanguageCode} from './languages.js'

export const AUDIO_ABILITIES = ['audio2text', 'text2audio']

export function validateAudioFamily(api: KernelApi, family: ModelFamily): void {
  const bad = (field: string, what: string) => api.errors.badRequest(`${field} ${what}`, field)
  if (family.model_family !== undefined && (typeof family.model_family !== 'string' || family.model_family === ''))
    throw bad('model_family', 'must be the name of the model\'s family, such as "whisper".')
  const abilities = family.model_ability
  if (abilities !== undefined && (!Array.isArray(abilities) || abilities.length === 0 || abilities.some((ability) => !AUDIO_ABILITIES.includes(ability))))
    throw bad('model_ability', `must list what the model does, from ${AUDIO_ABILITIES.join(' and ')} (e.g. ["audio2text"]).`)
  if (family.multilingual !== undefined && typeof family.multilingual !== 'boolean') throw bad('multilingual', 'must be true or false.')
  if (family.language !== undefined && (!Array.isArray(family.language) || family.language.some((code) => typeof code !== 'string')))
    throw bad('language', 'must be a list of language codes such as ["en", "zh"].')
  if (family.voices !== undefined && (!Array.isArray(family.voices) || family.voices.length === 0 || family.voices.some((voice) => typeof voice !== 'string' || voice === '')))
    throw bad('voices', 'must list the voice names of a text2audio model, its speaker ids in order (e.g. ["default"]).')
  const config = family.default_transcription_config
  if (config !== undefined && (typeof config !== 'object' || config === null || Array.isArray(config)))
    throw bad('default_transcription_config', 'must be an object of transcription options, such as {"language": "en"}.')
  // whisper.node ends the model process on a language whisper.cpp does not know, so the registration is where to refuse one.
  const language = (config as {language?: unknown} | undefined)?.language
  if (language !== undefined && (typeof language !== 'string' || !isLanguageCode(language)))
    throw bad('default_transcription_config', `language ${JSON.stringify(language)} is not one Whisper knows; give an ISO-639-1 code such as "en", "de" or "zh".`)
}
