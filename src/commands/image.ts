import {Flags} from '@oclif/core'
import {readFile} from 'node:fs/promises'

import {ClientCommand} from '../cli/base-command.js'
import {numberFlag} from '../cli/flags.js'
import {generationFlags, checkOutputFolder, writeGenerated} from '../cli/media.js'

export default class Image extends ClientCommand<typeof Image> {
  static description = `Make images with a running image model and write them as PNG files: from a prompt, or from a picture (--image) edited by the prompt, or repainted where a mask (--mask, white) marks it.`
  static examples = [
    '<%= config.bin %> image -u sd3.5-medium --prompt "a lighthouse at dawn" --size 1024x1024 --seed 7',
    '<%= config.bin %> image -u sd3.5-medium --image photo.png --mask mask.png --prompt "a red door" -o door',
  ]
  static flags = {
    ...generationFlags,
    'guidance-scale': numberFlag({description: 'How closely to follow the prompt (classifier-free guidance).'}),
    image: Flags.file({description: 'Picture to edit (PNG, JPEG or WebP).', exists: true}),
    mask: Flags.file({dependsOn: ['image'], description: 'Mask of the picture: white where it is repainted.', exists: true}),
    n: Flags.integer({char: 'n', default: 1, description: 'How many images to make.', max: 10, min: 1}),
    output: Flags.string({char: 'o', default: 'image', description: 'File name prefix: writes PREFIX-1.png, PREFIX-2.png, …'}),
    prompt: Flags.string({description: 'What to draw.', required: true}),
  }

  async run(): Promise<{files: string[]}> {
    const {flags} = this
    await checkOutputFolder(flags.output)
    const model = this.client().model(flags['model-uid'])
    const options = {
      guidance_scale: flags['guidance-scale'],
      n: flags.n,
      negative_prompt: flags['negative-prompt'],
      seed: flags.seed,
      size: flags.size,
      steps: flags.steps,
    }
    const picture = async (path: string) => new Blob([await readFile(path)])
    const reply = !flags.image
      ? await model.textToImage(flags.prompt, options)
      : flags.mask
        ? await model.inpainting(await picture(flags.image), await picture(flags.mask), flags.prompt, options)
        : await model.imageToImage(await picture(flags.image), flags.prompt, options)
    const files = await writeGenerated(reply.data.map((item) => item.b64_json!), flags.output, 'png')
    for (const file of files) this.log(`Wrote ${file}`)
    return {files}
  }
}
