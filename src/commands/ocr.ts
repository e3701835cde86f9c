import {Flags} from '@oclif/core'
import {readFile} from 'node:fs/promises'

import {ClientCommand} from '../cli/base-command.js'

export default class Ocr extends ClientCommand<typeof Ocr> {
  static description = 'Print the text in a picture, read by a running OCR model (an image model with the ocr ability).'
  static examples = ['<%= config.bin %> ocr -u GOT-OCR-2.0-hf --image receipt.png', '<%= config.bin %> ocr -u GOT-OCR-2.0-hf --image formula.png --kwargs \'{"format": true}\'']
  static flags = {
    image: Flags.file({description: 'Picture to read (PNG, JPEG or WebP).', exists: true, required: true}),
    kwargs: Flags.string({description: 'Further settings for the model, as a JSON object (for GOT-OCR: format, box, color, crop_to_patches, max_new_tokens).'}),
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
  }

  async run(): Promise<{text: string}> {
    const kwargs = this.parseJson('--kwargs', this.flags.kwargs ?? '{}', (value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'a JSON object')
    const reply = await this.client().model(this.flags['model-uid']).ocr(new Blob([await readFile(this.flags.image)]), kwargs as Record<string, unknown>)
    this.log(reply.text)
    return reply
  }
}
