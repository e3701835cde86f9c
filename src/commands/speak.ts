import {Args, Flags} from '@oclif/core'
import {createWriteStream} from 'node:fs'
import {rename, rm} from 'node:fs/promises'
import {extname} from 'node:path'
import {pipeline} from 'node:stream/promises'

import {ClientCommand} from '../cli/base-command.js'
import {numberFlag} from '../cli/flags.js'
import {checkOutputFolder} from '../cli/media.js'
import {ServiceError} from '../kernel/errors.js'

const FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const
type Format = (typeof FORMATS)[number]
/** The format a file's extension asks for: OpenAI's `opus` is Ogg Opus, so `.ogg` files take it too. */
const BY_EXTENSION: Record<string, Format> = {aac: 'aac', flac: 'flac', mp3: 'mp3', oga: 'opus', ogg: 'opus', opus: 'opus', pcm: 'pcm', raw: 'pcm', wav: 'wav'}

export default class Speak extends ClientCommand<typeof Speak> {
  // oclif reads a missing argument from stdin itself but drops what it read if the pipe has not ended within 10 ms.
  static args = {text: Args.string({description: 'What to say; read from stdin when absent.', ignoreStdin: true})}
  static description = `Speak a text with a running text2audio model, writing the audio to a file.

The format follows the file's extension (mp3, ogg or opus, aac, flac, wav, pcm; mp3 for none) unless --response-format says otherwise. The file appears only once the audio is complete.`
  static examples = [
    '<%= config.bin %> speak -u mms-tts-eng --voice default -o hello.mp3 "Hello there."',
    'cat notes.txt | <%= config.bin %> speak -u mms-tts-eng --voice default -o notes.wav',
  ]
  static flags = {
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
    output: Flags.string({char: 'o', description: 'The audio file to write.', required: true}),
    'response-format': Flags.string({description: 'Audio format (default: from the file\'s extension, else mp3).', options: [...FORMATS]}),
    speed: numberFlag({description: 'Speaking speed, 0.25 to 4.'}),
    voice: Flags.string({default: 'default', description: 'One of the model\'s voices.'}),
  }

  async run(): Promise<{output: string; bytes: number}> {
    const {args, flags} = this
    const text = args.text ?? (await readStdin())
    if (text.trim() === '') throw new ServiceError(400, 'invalid_request', 'there is nothing to say: give the text as an argument or on stdin.')
    const extension = extname(flags.output).slice(1).toLowerCase()
    if (!flags['response-format'] && extension && !BY_EXTENSION[extension])
      this.error(`--output ${flags.output}: .${extension} is no audio format this can write; name the file .mp3, .ogg, .opus, .aac, .flac, .wav or .pcm, or give --response-format.`, {exit: 2})
    const format = (flags['response-format'] as Format | undefined) ?? (extension ? BY_EXTENSION[extension] : 'mp3')
    await checkOutputFolder(flags.output)
    const audio = this.client().model(flags['model-uid']).speech(text, {response_format: format, speed: flags.speed, voice: flags.voice})
    // Written beside the file and renamed into place, so a failure halfway leaves no broken audio file behind.
    const partial = `${flags.output}.partial`
    let bytes = 0
    try {
      await pipeline(
        async function* () {
          for await (const chunk of audio) {
            bytes += chunk.length
            yield chunk
          }
        },
        createWriteStream(partial),
      )
      await rename(partial, flags.output)
    } catch (error) {
      await rm(partial, {force: true})
      throw error
    }

    if (!this.jsonEnabled()) this.log(`Wrote ${flags.output} (${format}, ${bytes} bytes)`)
    return {bytes, output: flags.output}
  }
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return ''
  let text = ''
  for await (const chunk of process.stdin) text += chunk
  return text
}
