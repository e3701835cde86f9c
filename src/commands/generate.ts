import {Flags} from '@oclif/core'

import {ClientCommand} from '../cli/base-command.js'
import type {JsonFailure} from '../cli/json-command.js'
import {numberFlag} from '../cli/flags.js'
import {labelledAnswer, runRepl} from '../cli/repl.js'

export default class Generate extends ClientCommand<typeof Generate> {
  static description = `Complete text with a running model, one prompt per line; an empty line ends it. Lines may be piped in.

On a terminal, the up arrow recalls prompts typed before (kept in SERVICE_HOME/history/generate), and a prompt that fails is left out while it goes on; piped prompts stop at the first failure, which it exits with. With --json, the completions show on stderr and stdout holds only the JSON, with the completions before a failure.`
  static examples = ['<%= config.bin %> generate --model-uid qwen2.5-instruct', 'echo "Once upon a time" | <%= config.bin %> generate --model-uid qwen2.5-instruct --no-stream']
  static flags = {
    'max-tokens': Flags.integer({aliases: ['max_tokens'], default: 512, description: 'Most tokens per completion.', min: 1}),
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
    stream: Flags.boolean({allowNo: true, default: true, description: 'Print the completion as it is generated.'}),
    temperature: numberFlag({description: 'Sampling temperature, 0 to 2.'}),
  }

  async run(): Promise<{completions: Array<{prompt: string; completion: string}>; errors?: JsonFailure[]}> {
    const {flags} = this
    const model = this.client().model(flags['model-uid'])
    const options = {max_tokens: flags['max-tokens'], temperature: flags.temperature}
    const completions: Array<{prompt: string; completion: string}> = []
    const output = this.conversationOutput()
    const errors: JsonFailure[] = []
    this.partialResult = {completions}
    const onFailedTurn = (error: unknown, prompt: string) => errors.push({...this.failedTurn(error), prompt})
    await runRepl({history: this.replHistory('generate'), onFailedTurn, output, prompt: 'Prompt: '}, async (prompt, signal) => {
      let completion = ''
      const shown = labelledAnswer(output, 'Completion: ')
      try {
        if (flags.stream) {
          for await (const chunk of model.generateStream(prompt, options, signal)) {
            const text = chunk.choices[0]?.text ?? ''
            completion += text
            shown.write(text)
          }
        } else {
          completion = (await model.generate(prompt, options, signal)).choices[0]?.text ?? ''
          shown.write(completion)
        }
      } catch (error) {
        shown.abandon()
        throw error
      }

      shown.end()
      completions.push({completion, prompt})
    })
    return errors.length > 0 ? {completions, errors} : {completions}
  }
}
