import {Flags} from '@oclif/core'

import {ClientCommand} from '../cli/base-command.js'

export default class Infer extends ClientCommand<typeof Infer> {
  static description = 'Run a flexible model once (Xinference\'s infers call) and print its JSON answer: for an ONNX model, its inputs by name or in order.'
  static examples = [
    '<%= config.bin %> infer --model-uid my-classifier --kwargs \'{"x": [[1, 2, 3]]}\'',
    '<%= config.bin %> infer --model-uid my-classifier --args \'[[[1, 2, 3]]]\'',
  ]
  static flags = {
    args: Flags.string({description: 'Positional arguments, as a JSON array.'}),
    kwargs: Flags.string({description: 'Keyword arguments, as a JSON object.'}),
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
  }

  async run(): Promise<unknown> {
    const args = this.parseJson('--args', this.flags.args ?? '[]', Array.isArray, 'a JSON array')
    const kwargs = this.parseJson('--kwargs', this.flags.kwargs ?? '{}', (value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'a JSON object')
    const result = await this.client().model(this.flags['model-uid']).infer(args as unknown[], kwargs as Record<string, unknown>)
    if (!this.jsonEnabled()) this.log(JSON.stringify(result, null, 2))
    return result
  }
}
