/**
 * How the llama.cpp engine turns a conversation into node-llama-cpp history, read through the prompt ChatML renders
 * from it: which response the answer goes on, a new one or the conversation's last.
 */
import {expect} from 'chai'
import {ChatMLChatWrapper} from 'node-llama-cpp'

import type {ChatTurn} from '../../src/kernel/generation.js'

import {toHistory} from '../../plugins/engine-llama-cpp/src/tools.js'

const render = (messages: ChatTurn[], continueFinal?: boolean) =>
  new ChatMLChatWrapper().generateContextState({chatHistory: toHistory(messages, undefined, continueFinal)}).contextText.toString()

describe('llama.cpp chat history', () => {
  const ask: ChatTurn = {content: 'Hello!', role: 'user'}
  const prefill: ChatTurn = {content: 'Sure:', role: 'assistant'}
  const question = render([ask])

  it('answers after the conversation in a new assistant turn', () => {
    expect(question.endsWith('<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n')).to.equal(true)
    expect(render([ask, prefill]), 'a final assistant turn is closed by default (OpenAI)').to.equal(
      `${question}Sure:<|im_end|>\n<|im_start|>assistant\n`,
    )
  })

  it('continues a final assistant turn when asked (a prefill): its text is the start of the answer', () => {
    expect(render([ask, prefill], true)).to.equal(`${question}Sure:`)
    expect(render([ask, {content: '', role: 'assistant'}], true), 'an empty prefill is a new turn').to.equal(question)
  })

  it('continues the response whose tool calls the final tool results answer, and opens a new one after calls with no results', () => {
    const call = {arguments: '{"city":"Paris"}', id: 'call_1', name: 'get_weather'}
    const calling: ChatTurn = {content: '', role: 'assistant', toolCalls: [call]}
    const answered = render([ask, calling, {content: '18 degrees', role: 'tool', toolCallId: 'call_1'}])
    expect(answered).to.contain('18 degrees').and.not.match(/<\|im_start\|>assistant\n$/)
    expect(render([ask, calling], true), 'a final turn of tool calls has no text to continue').to.match(/<\|im_start\|>assistant\n$/)
  })
})
