import {Flags} from '@oclif/core'
import {readFile} from 'node:fs/promises'

import {ClientCommand} from '../cli/base-command.js'
import {generationFlags, checkOutputFolder, writeGenerated} from '../cli/media.js'

export default class Video extends ClientCommand<typeof Video> {
  static description = 'Make videos with a running video model and write them as MP4 files: from a prompt, from a picture (--image), or between a first and a last frame (--image and --last-frame).'
  static examples = [
    '<%= config.bin %> video -u Wan2.1-1.3B --prompt "a cat surfing" --num-frames 33',
    '<%= config.bin %> video -u Wan2.1-flf2v-14B-720p --image first.png --last-frame last.png -o flight',
  ]
  static flags = {
    ...generationFlags,
    fps: Flags.integer({description: 'Frames per second of the file.', min: 1}),
    image: Flags.file({description: 'Picture to animate, or the first frame (PNG, JPEG or WebP).', exists: true}),
    'last-frame': Flags.file({dependsOn: ['image'], description: 'The last frame, the size of the first.', exists: true}),
    n: Flags.integer({char: 'n', default: 1, description: 'How many videos to make.', max: 4, min: 1}),
    'num-frames': Flags.integer({description: 'Frames to make.', min: 1}),
    output: Flags.string({char: 'o', default: 'video', description: 'File name prefix: writes PREFIX-1.mp4, PREFIX-2.mp4, …'}),
    prompt: Flags.string({default: '', description: 'What the video shows (required without --image).'}),
  }

  async run(): Promise<{files: string[]}> {
    const {flags} = this
    await checkOutputFolder(flags.output)
    const model = this.client().model(flags['model-uid'])
    const options = {fps: flags.fps, n: flags.n, negative_prompt: flags['negative-prompt'], num_frames: flags['num-frames'], seed: flags.seed, size: flags.size, steps: flags.steps}
    const picture = async (path: string) => new Blob([await readFile(path)])
    const reply = !flags.image
      ? await model.textToVideo(flags.prompt, options)
      : flags['last-frame']
        ? await model.flfToVideo(await picture(flags.image), await picture(flags['last-frame']), flags.prompt, options)
        : await model.imageToVideo(await picture(flags.image), flags.prompt, options)
    const files = await writeGenerated(reply.data.map((item) => item.b64_json!), flags.output, 'mp4')
    for (const file of files) this.log(`Wrote ${file}`)
    return {files}
  }
}
