import {Flags} from '@oclif/core'

import type {ChatMessage} from '../client/client.js'
import type {JsonFailure} from '../cli/json-command.js'

import {ClientCommand} from '../cli/base-command.js'
import {numberFlag} from '../cli/flags.js'
import {labelledAnswer, runRepl} from '../cli/repl.js'

export default class Chat extends ClientCommand<typeof Chat> {
  static description = `Chat with a running model, one line per turn; an empty line ends the chat. Lines may be piped in.

On a terminal, the up arrow recalls lines typed before, in this chat and earlier ones (kept in SERVICE_HOME/history/chat), and a turn that fails is left out while the chat goes on; piped lines stop at the first failure, which the chat exits with. With --json, the conversation shows on stderr and stdout holds only the JSON, with the turns before a failure.`
  static examples = ['<%= config.bin %> chat --model-uid qwen2.5-instruct', 'echo "Hello" | <%= config.bin %> chat --model-uid qwen2.5-instruct --no-stream']
  static flags = {
    'max-tokens': Flags.integer({aliases: ['max_tokens'], default: 512, description: 'Most tokens per answer.', min: 1}),
    'model-uid': Flags.string({char: 'u', description: 'Uid of the model.', required: true}),
    stream: Flags.boolean({allowNo: true, default: true, description: 'Print the answer as it is generated.'}),
    system: Flags.string({description: 'System prompt.'}),
    temperature: numberFlag({description: 'Sampling temperature, 0 to 2.'}),
  }

  async run(): Promise<{messages: ChatMessage[]; errors?: JsonFailure[]}> {
    const {flags} = this
    const model = this.client().model(flags['model-uid'])
    const messages: ChatMessage[] = flags.system ? [{content: flags.system, role: 'system'}] : []
    const options = {max_tokens: flags['max-tokens'], temperature: flags.temperature}
    const output = this.conversationOutput()
    const errors: JsonFailure[] = []
    this.partialResult = {messages}
    const onFailedTurn = (error: unknown, line: string) => errors.push({...this.failedTurn(error), prompt: line})
    await runRepl({history: this.replHistory('chat'), onFailedTurn, output, prompt: 'User: '}, async (line, signal) => {
      messages.push({content: line, role: 'user'})
      let answer = ''
      const shown = labelledAnswer(output, 'Assistant: ')
      try {
        if (flags.stream) {
          for await (const chunk of model.chatStream(messages, options, signal)) {
            const text = chunk.choices[0]?.delta?.content ?? ''
            answer += text
            shown.write(text)
          }
        } else {
          answer = (await model.chat(messages, options, signal)).choices[0]?.message.content ?? ''
          shown.write(answer)
        }
      } catch (error) {
        shown.abandon()
        // A stopped answer stays as far as it came; a failed one, or one stopped before any text, takes its question
        // back, so that turns still alternate, as chat templates require.
        if (signal.aborted && answer) messages.push({content: answer, role: 'assistant'})
        else messages.pop()
        throw error
      }

      shown.end()
      messages.push({content: answer, role: 'assistant'})
    })
    return errors.length > 0 ? {errors, messages} : {messages}
  }
}
