import type {ModelFamily, RegisterHook} from 'service-toolkit'

import {readFile} from 'node:fs/promises'

import {speechRoute} from './speech.js'
import {transcriptionRoutes} from './transcription.js'
import {validateAudioFamily} from './family.js'

const register: RegisterHook = async ({api}) => {
  const families = JSON.parse(await readFile(new URL('../catalogue/audio-families.json', import.meta.url), 'utf8')) as ModelFamily[]
  return {
    catalogue: [{families, modelType: 'audio'}],
    modelTypes: [
      {
        defaultAbilities: ['audio2text'],
        description: 'Audio models: speech to text (audio2text) and text to speech (text2audio).',
        name: 'audio',
        registrationColumns: [
          ['Name', 'model_name'],
          ['Family', 'model_family'],
          ['Ability', 'model_ability'],
          ['Multilingual', 'multilingual'],
        ],
        validateFamily: (family) => validateAudioFamily(api, family),
      },
    ],
    routes: [...transcriptionRoutes(api), speechRoute(api)],
  }
}

export default register
