/**
 * An external engine's stream, relayed through a real `service-local` to the official openai client, is paced as a
 * model process paces its own: the program (the external echo template's server) writes a chunk per word, and the
 * client gets the first word alone at once and the words that follow within the stream interval joined. The interval
 * is set far above the whole reply's time (SERVICE_STREAM_INTERVAL_MS), so which words go together does not depend on
 * the machine's speed.
 */
import {expect} from 'chai'
import {rm} from 'node:fs/promises'
import OpenAI from 'openai'

import {echoService, launchEcho} from '../helpers/external-echo.js'
import {type RunningService} from '../helpers/service.js'

describe("an external engine's stream through the service, paced like a model process's", function () {
  let service: RunningService
  let openai: OpenAI
  const words = Array.from({length: 60}, (_, index) => `w${index}`)

  before(async () => {
    service = await echoService([], {SERVICE_STREAM_INTERVAL_MS: '60000'})
    openai = new OpenAI({apiKey: 'unused', baseURL: `${service.url}/v1`, maxRetries: 0})
    await launchEcho(service, 'echo-paced')
  })

  after(async () => {
    await service?.stop()
    await rm(service.home, {force: true, recursive: true})
  })

  it('60 words the program streams one a chunk arrive in three text chunks, the first alone, with the same text and usage', async () => {
    const messages = [{content: words.join(' '), role: 'user' as const}]
    const reply = await openai.chat.completions.create({messages, model: 'echo-paced'})
    const stream = await openai.chat.completions.create({messages, model: 'echo-paced', stream: true, stream_options: {include_usage: true}})
    const deltas: string[] = []
    let usage: OpenAI.CompletionUsage | undefined
    let finish: string | null = null
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content)
      finish = chunk.choices[0]?.finish_reason ?? finish
      usage = chunk.usage ?? usage
    }

    expect(deltas).to.deep.equal(['w0', ' w1', words.slice(2).map((word) => ` ${word}`).join('')])
    expect(deltas.join('')).to.equal(reply.choices[0].message.content)
    expect(finish).to.equal('stop')
    expect(usage).to.deep.equal(reply.usage)
    expect(usage).to.deep.include({completion_tokens: 60, prompt_tokens: 60})
  })
})
