import type {RegisterHook} from 'service-toolkit'

import {normalizeFlexibleFamily, validateFlexibleFamily} from './family.js'
import {infersRoute} from './infers.js'

/** No built-in catalogue: a flexible model is always the user's own file, registered with its launcher. */
const register: RegisterHook = async ({api}) => ({
  modelTypes: [
    {
      defaultAbilities: ['infer'],
      description: 'Flexible models (traditional machine learning: ONNX graphs, Python functions): any JSON in, the model\'s JSON out.',
      name: 'flexible',
      normalizeFamily(family) {
        validateFlexibleFamily(api, family)
        return normalizeFlexibleFamily(family)
      },
      registrationColumns: [
        ['Name', 'model_name'],
        ['Launcher', 'launcher'],
        ['Model URI', 'model_uri'],
      ],
    },
  ],
  routes: [infersRoute(api)],
})

export default register
