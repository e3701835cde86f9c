import {Flags} from '@oclif/core'
import {readFile} from 'node:fs/promises'

import {ClientCommand} from '../cli/base-command.js'

export default class Ocr extends ClientCommand<typeof Ocr> {
  static description = 'Print the text in a picture, read by a running OCR model (an image model with the ocr ability).'
  static examples = ['<%= config.bin %> ocr -u GOT-OCR2_0 --image receipt.png']
  static flags = {
    image: Flags.file({description: 'Picture to read (PNG, JPEG or WebP).', exists: true, required: true}),
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
  }

  async run(): Promise<{text: string}> {
    const reply = await this.client().model(this.flags['model-uid']).ocr(new Blob([await readFile(this.flags.image)]))
    this.log(reply.text)
    return reply
  }
}
