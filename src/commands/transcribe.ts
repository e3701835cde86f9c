import {Args, Flags} from '@oclif/core'
import {readFile} from 'node:fs/promises'
import {basename} from 'node:path'

import {ClientCommand} from '../cli/base-command.js'
import {numberFlag} from '../cli/flags.js'
import {ServiceError} from '../kernel/errors.js'

export default class Transcribe extends ClientCommand<typeof Transcribe> {
  static args = {file: Args.string({description: 'The recording: wav, mp3, flac, ogg, m4a, webm, or anything else FFmpeg reads.', required: true})}
  static description = `Turn speech into text with a running audio2text model (Whisper), printing the text, subtitles or JSON.

With --translate the text is English whatever the language spoken. --response-format srt or vtt prints subtitles; verbose_json prints segments with their times (and words with --timestamp-granularities word).`
  static examples = [
    '<%= config.bin %> transcribe --model-uid whisper-tiny meeting.mp3',
    '<%= config.bin %> transcribe -u whisper-tiny talk.webm --response-format srt > talk.srt',
    '<%= config.bin %> transcribe -u whisper-tiny interview.m4a --translate',
  ]
  static flags = {
    language: Flags.string({description: 'ISO-639-1 code of the language spoken (en, de, zh…); detected when absent.'}),
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
    prompt: Flags.string({description: 'Text that comes before the recording: names and spellings to follow.'}),
    'response-format': Flags.string({default: 'text', description: 'What to print.', options: ['json', 'text', 'srt', 'verbose_json', 'vtt']}),
    temperature: numberFlag({description: 'Sampling temperature, 0 to 1.'}),
    'timestamp-granularities': Flags.string({description: 'With verbose_json: segment, word, or both.', multiple: true, options: ['segment', 'word']}),
    translate: Flags.boolean({default: false, description: 'Translate into English.'}),
  }

  async run(): Promise<unknown> {
    const {args, flags} = this
    const audio = await readFile(args.file).catch((error: NodeJS.ErrnoException) => {
      throw new ServiceError(400, 'invalid_request', `cannot read ${args.file}: ${error.code === 'ENOENT' ? 'there is no such file' : error.message}.`)
    })
    const result = await this.client()
      .model(flags['model-uid'])
      .transcribe(new Blob([audio]), {
        fileName: basename(args.file),
        language: flags.language,
        prompt: flags.prompt,
        response_format: flags['response-format'] as 'text',
        temperature: flags.temperature,
        timestamp_granularities: flags['timestamp-granularities'] as Array<'segment' | 'word'> | undefined,
        translate: flags.translate,
      })
    if (!this.jsonEnabled()) this.log(typeof result === 'string' ? result.replace(/\n$/, '') : JSON.stringify(result, null, 2))
    // oclif prints a returned string as JSON text, which a transcript is not.
    return typeof result === 'string' ? {text: result} : result
  }
}
