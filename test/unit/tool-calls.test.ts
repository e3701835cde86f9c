/**
 * The tool-call split of each template family on golden streams: the same output cut at every place (inside markers
 * and JSON too) gives the same content and calls, a call whose JSON does not parse comes back as the text it was
 * (unless Hermes' name and arguments had begun streaming), and the format is found from the launch, the family's
 * parser or the chat template's markers.
 */
import {expect} from 'chai'
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import type {GenerationEvent} from '../../src/kernel/generation.js'

import {type ResponseObject, runResponse} from '../../plugins/model-llm/src/responses-run.js'

import {toolCallFormatOf, toolCallFormatOfTemplate} from '../../src/kernel/tool-call-format.js'
import {splitToolCalls, ToolCallParser, type ToolCallFormat} from '../../src/kernel/tool-calls.js'

interface Outcome {
  content: string
  calls: Array<{name: string; arguments: string}>
}

/** The output as the parser settles it from `chunks`, with the order kept: calls never come before their index's name. */
function parse(format: ToolCallFormat, chunks: string[]): Outcome {
  const parser = new ToolCallParser(format)
  const events = [...chunks.flatMap((chunk) => parser.push(chunk)), ...parser.finish()]
  const outcome: Outcome = {calls: [], content: ''}
  for (const event of events) {
    if (event.type === 'text') outcome.content += event.text
    else if (event.type === 'tool_call') {
      expect(event.index).to.equal(outcome.calls.length)
      outcome.calls.push({arguments: '', name: event.name})
    } else if (event.type === 'tool_arguments') outcome.calls[event.index].arguments += event.text
  }

  return outcome
}

/** `text` whole, cut once at every place, and one character at a time: each must give `expected`. */
function expectEverySplit(format: ToolCallFormat, text: string, expected: Outcome): void {
  expect(parse(format, [text]), 'whole').to.deep.equal(expected)
  for (let at = 0; at <= text.length; at++) expect(parse(format, [text.slice(0, at), text.slice(at)]), `cut at ${at}`).to.deep.equal(expected)
  expect(parse(format, [...text]), 'a character at a time').to.deep.equal(expected)
}

const weather = {arguments: '{"city":"Paris","unit":"celsius"}', name: 'get_weather'}
const clock = {arguments: '{}', name: 'get_time'}
/** Hermes' calls stream their arguments' text as the model wrote it, spaces included. */
const weatherAsWritten = {arguments: '{"city": "Paris", "unit": "celsius"}', name: 'get_weather'}

describe('tool-call parser', () => {
  describe('Hermes / Qwen', () => {
    it('splits calls between <tool_call> tags from the text around them, at every chunk boundary', () => {
      const text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
      expectEverySplit('hermes', text, {calls: [weatherAsWritten, clock], content: 'Let me check.'})
    })

    it('announces a call once its name is read and streams its arguments as they come, stopping where they end', () => {
      const text = 'Ok\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Pa}ris\\"", "days": [1, {"n": 2}]}}\n</tool_call> Done'
      const parser = new ToolCallParser('hermes')
      const events = [...[...text].flatMap((character) => parser.push(character)), ...parser.finish()]
      const announced = events.findIndex((event) => event.type === 'tool_call')
      const pieces = events.flatMap((event) => (event.type === 'tool_arguments' ? [event.text] : []))
      expect(events[announced]).to.deep.equal({index: 0, name: 'get_weather', type: 'tool_call'})
      // A character at a time: each piece of the arguments is a delta of its own, after the announcement.
      expect(events.slice(announced + 1, announced + 1 + pieces.length).every((event) => event.type === 'tool_arguments')).to.equal(true)
      expect(pieces.length).to.be.greaterThan(10)
      const args = '{"city": "Pa}ris\\"", "days": [1, {"n": 2}]}'
      expect(pieces.join('')).to.equal(args)
      expectEverySplit('hermes', text, {calls: [{arguments: args, name: 'get_weather'}], content: 'OkDone'})
    })

    it('waits for the whole call when its arguments come first or as a string, and parses it then', () => {
      expectEverySplit('hermes', '<tool_call>{"arguments": {"city": "Paris", "unit": "celsius"}, "name": "get_weather"}</tool_call>', {calls: [weather], content: ''})
      expectEverySplit('hermes', '<tool_call>{"name": "get_time", "arguments": "{}"}</tool_call>', {calls: [clock], content: ''})
    })

    it('keeps a streamed call cut short with the arguments written so far, as OpenAI does', () => {
      expectEverySplit('hermes', 'A <tool_call>{"name": "get_weather", "arguments": {"city": </tool_call> B', {calls: [{arguments: '{"city": ', name: 'get_weather'}], content: 'AB'})
      expectEverySplit('hermes', '<tool_call>{"name": "get_weather", "arguments": {"ci', {calls: [{arguments: '{"ci', name: 'get_weather'}], content: ''})
    })

    it('passes text without calls through unchanged, white space and a lone closing tag included', () => {
      expectEverySplit('hermes', '  Hello,\n world </tool_call> <tool_ ', {calls: [], content: '  Hello,\n world </tool_call> <tool_ '})
    })

    it('gives back a call whose JSON does not parse, or that is not a call, as the text it was', () => {
      const broken = 'A <tool_call>{"arguments": {"city": "Paris"}, "name": </tool_call> B'
      expectEverySplit('hermes', broken, {calls: [], content: broken})
      expectEverySplit('hermes', '<tool_call>{"name": "bad\\q", "arguments": {}}</tool_call>', {calls: [], content: '<tool_call>{"name": "bad\\q", "arguments": {}}</tool_call>'})
      expectEverySplit('hermes', '<tool_call>[1, 2]</tool_call>', {calls: [], content: '<tool_call>[1, 2]</tool_call>'})
    })

    it('parses a call the output ended inside, and keeps an unfinished one as text', () => {
      expectEverySplit('hermes', '<tool_call>{"name": "get_time", "arguments": {}}', {calls: [clock], content: ''})
      expectEverySplit('hermes', 'x <tool_call>{"name": "get_t', {calls: [], content: 'x <tool_call>{"name": "get_t'})
    })
  })

  describe('Llama 3.x JSON', () => {
    it('takes an answer that is a JSON call, with "parameters" or after <|python_tag|>, and several separated by semicolons', () => {
      expectEverySplit('llama3_json', ' {"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}', {calls: [weather], content: ''})
      expectEverySplit('llama3_json', '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}; {"name": "get_time", "parameters": {}}', {
        calls: [weather, clock],
        content: '',
      })
    })

    it('leaves JSON that is not a call, and JSON after text, as text', () => {
      expectEverySplit('llama3_json', '{"answer": 42}', {calls: [], content: '{"answer": 42}'})
      expectEverySplit('llama3_json', 'Here: {"name": "get_time", "parameters": {}}', {calls: [], content: 'Here: {"name": "get_time", "parameters": {}}'})
    })
  })

  describe('Mistral', () => {
    it('takes the JSON list after [TOOL_CALLS], and the newer name[ARGS]{…} form', () => {
      expectEverySplit('mistral', '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}, {"name": "get_time", "arguments": {}}]', {
        calls: [weather, clock],
        content: '',
      })
      expectEverySplit('mistral', '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "celsius"}[TOOL_CALLS]get_time[ARGS]{}', {calls: [weather, clock], content: ''})
    })

    it('gives back a list that does not parse as text', () => {
      expectEverySplit('mistral', 'Sure. [TOOL_CALLS] [{"name": "get_weather", "arguments": ', {calls: [], content: 'Sure. [TOOL_CALLS] [{"name": "get_weather", "arguments": '})
    })
  })

  it('numbers its calls after those the engine announced, and ends a reply that made calls with tool_calls', async () => {
    async function* engine(): AsyncGenerator<GenerationEvent> {
      yield {promptTokens: 5, type: 'start'}
      yield {index: 0, name: 'get_time', type: 'tool_call'}
      yield {text: 'Ok <tool_', type: 'text'}
      yield {text: 'call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>', type: 'text'}
      yield {completionTokens: 9, finishReason: 'stop', promptTokens: 5, type: 'done'}
    }

    const events: GenerationEvent[] = []
    for await (const event of splitToolCalls(engine(), 'hermes')) events.push(event)
    expect(events).to.deep.equal([
      {promptTokens: 5, type: 'start'},
      {index: 0, name: 'get_time', type: 'tool_call'},
      {text: 'Ok', type: 'text'},
      {index: 1, name: 'get_weather', type: 'tool_call'},
      {index: 1, text: '{"city": "Paris"}', type: 'tool_arguments'},
      {completionTokens: 9, finishReason: 'tool_calls', promptTokens: 5, type: 'done'},
    ])
  })

  it("streams a Hermes call's arguments as the Responses API's function_call_arguments deltas, the item named first", async () => {
    const args = '{"city": "Paris", "unit": "celsius"}'
    async function* engine(): AsyncGenerator<GenerationEvent> {
      yield {promptTokens: 5, type: 'start'}
      for (const piece of ['<tool_', 'call>{"name": "get_wea', 'ther", "arguments": {"ci', 'ty": "Par', 'is", "unit": "celsius"}', '}</tool_call>']) yield {text: piece, type: 'text'}
      yield {completionTokens: 9, finishReason: 'stop', promptTokens: 5, type: 'done'}
    }

    const response: ResponseObject = {id: 'resp_1', output: [], status: 'in_progress'}
    // Events carry the live Response and items, so each is recorded as the stream writes it: serialized before the next.
    const events = []
    for await (const event of runResponse(response, splitToolCalls(engine(), 'hermes')).events) events.push(JSON.parse(JSON.stringify(event.data)) as typeof event.data)
    const types = events.map((event) => event.type).filter((type) => type.startsWith('response.function_call') || type.startsWith('response.output_item'))
    expect(types).to.deep.equal([
      'response.output_item.added',
      ...Array.from({length: 3}, () => 'response.function_call_arguments.delta'),
      'response.function_call_arguments.done',
      'response.output_item.done',
    ])
    expect(events.find((event) => event.type === 'response.output_item.added')!.item).to.deep.include({arguments: '', name: 'get_weather', type: 'function_call'})
    // Each piece of the arguments as the engine wrote it, the first once the name was whole; the call's closing brace is not one.
    expect(events.filter((event) => event.type === 'response.function_call_arguments.delta').map((event) => event.delta)).to.deep.equal(['{"ci', 'ty": "Par', 'is", "unit": "celsius"}'])
    expect(events.find((event) => event.type === 'response.function_call_arguments.done')).to.deep.include({arguments: args, name: 'get_weather'})
  })

  describe('format', () => {
    it("finds the format in a chat template's markers", () => {
      expect(toolCallFormatOfTemplate('{% for tool in tools %}<tools>{{ tool }}</tools>{% endfor %} <tool_call>')).to.equal('hermes')
      expect(toolCallFormatOfTemplate('{{ "[AVAILABLE_TOOLS]" }} … {{ "[TOOL_CALLS]" }}')).to.equal('mistral')
      expect(toolCallFormatOfTemplate('{{- "<|python_tag|>" + tool_call.arguments.code }}')).to.equal('llama3_json')
      expect(toolCallFormatOfTemplate('Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.')).to.equal('llama3_json')
      expect(toolCallFormatOfTemplate('{{ message.content }}')).to.equal(undefined)
    })

    it("takes the launch's choice first, then the family's tool_parser, then its template, then the files beside the weights", () => {
      const folder = mkdtempSync(join(tmpdir(), 'tool-format-'))
      writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify({chat_template: [{name: 'default', template: '{{ "[TOOL_CALLS]" }}'}]}))
      writeFileSync(join(folder, 'model.safetensors'), '')
      expect(toolCallFormatOf({family: {tool_parser: 'qwen'}, modelPath: folder, parameters: {tool_call_format: 'llama3_json'}})).to.equal('llama3_json')
      expect(toolCallFormatOf({family: {tool_parser: 'qwen'}, modelPath: folder, parameters: {tool_call_format: 'none'}})).to.equal(undefined)
      expect(toolCallFormatOf({family: {tool_parser: 'llama3'}, modelPath: folder, parameters: {}})).to.equal('llama3_json')
      expect(toolCallFormatOf({family: {chat_template: '<tool_call>'}, modelPath: folder, parameters: {}})).to.equal('hermes')
      expect(toolCallFormatOf({family: {}, modelPath: join(folder, 'model.safetensors'), parameters: {}})).to.equal('mistral')
      writeFileSync(join(folder, 'chat_template.jinja'), '{{ "<tool_call>" }}')
      expect(toolCallFormatOf({family: {}, modelPath: folder, parameters: {}})).to.equal('hermes')
      expect(toolCallFormatOf({family: {}, modelPath: join(folder, 'missing'), parameters: {}})).to.equal(undefined)
    })
  })
})
