/**
 * Golden streams per template family, as vLLM tests its reasoning parsers: the model's raw output after a template's
 * prompt, split into reasoning and answer, whatever the chunks, including chunks that end inside a marker.
 */
import {expect} from 'chai'

import type {GenerationEvent} from '../../src/kernel/generation.js'

import {type ReasoningFormat, reasoningFormatOf, ReasoningParser, splitReasoning, THINK_TAGS} from '../../src/kernel/reasoning.js'

interface Golden {
  name: string
  format: ReasoningFormat
  /** The end of the prompt the template rendered. */
  promptTail: string
  output: string
  reasoning: string
  content: string
}

const HARMONY: ReasoningFormat = {kind: 'harmony'}

const GOLDEN: Golden[] = [
  {
    content: 'The answer is 4.',
    format: THINK_TAGS,
    name: 'qwen3 thinking',
    output: '<think>\nThe user adds 2 and 2.\nThat is 4.\n</think>\n\nThe answer is 4.',
    promptTail: '<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n',
    reasoning: 'The user adds 2 and 2.\nThat is 4.',
  },
  {
    content: 'Hello there.',
    format: THINK_TAGS,
    name: 'qwen3 with enable_thinking false (the template closes an empty block)',
    output: 'Hello there.',
    promptTail: '<|im_start|>assistant\n<think>\n\n</think>\n\n',
    reasoning: '',
  },
  {
    content: 'Hello.',
    format: THINK_TAGS,
    name: 'qwen3 emitting an empty think block itself',
    output: '<think>\n\n</think>\n\nHello.',
    promptTail: '<|im_start|>assistant\n',
    reasoning: '',
  },
  {
    content: '**4**',
    format: THINK_TAGS,
    name: 'deepseek-r1 distill (the prompt opens the block)',
    output: 'Okay, 2 plus 2.\nSo 4.\n</think>\n\n**4**',
    promptTail: '<｜User｜>2+2?<｜Assistant｜><think>\n',
    reasoning: 'Okay, 2 plus 2.\nSo 4.',
  },
  {
    content: 'Four.',
    format: THINK_TAGS,
    name: 'deepseek-r1 with an older template (the model opens the block)',
    output: '<think>\nEasy.\n</think>\n\nFour.',
    promptTail: '<｜User｜>2+2?<｜Assistant｜>',
    reasoning: 'Easy.',
  },
  {
    content: '',
    format: THINK_TAGS,
    name: 'QwQ cut off by max_tokens inside the end tag',
    output: 'Let me count: 1, 2 </th',
    promptTail: '<|im_start|>assistant\n<think>\n',
    reasoning: 'Let me count: 1, 2 </th',
  },
  {
    content: 'Use <b>bold</b> and a < sign, or <thin',
    format: THINK_TAGS,
    name: 'a reasoning model answering with look-alikes of the tags',
    output: 'Use <b>bold</b> and a < sign, or <thin',
    promptTail: '<think>\n\n</think>\n\n',
    reasoning: '',
  },
  {
    content: '答案是四。',
    format: {end: '◁/think▷', kind: 'tags', start: '◁think▷'},
    name: "a family's own tags, text outside the BMP",
    output: '◁think▷思考🤔一下◁/think▷答案是四。',
    promptTail: '<|im_assistant|>assistant<|im_middle|>',
    reasoning: '思考🤔一下',
  },
  {
    content: 'It is 4.',
    format: HARMONY,
    name: 'gpt-oss analysis then final',
    output: '<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.<|return|>',
    promptTail: '<|start|>user<|message|>2+2?<|end|><|start|>assistant',
    reasoning: 'User asks 2+2. Answer 4.',
  },
  {
    content: 'Checking the weather.{"city":"Paris"}',
    format: HARMONY,
    name: 'gpt-oss commentary with a constrained tool call',
    output:
      '<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>',
    promptTail: '<|start|>assistant',
    reasoning: 'Need weather.',
  },
]

function run(golden: Golden, chunks: string[]): {reasoning: string; content: string} {
  const parser = new ReasoningParser(golden.format, golden.promptTail)
  const result = {content: '', reasoning: ''}
  for (const piece of [...chunks.flatMap((chunk) => parser.push(chunk)), ...parser.finish()]) {
    if (piece.reasoning) result.reasoning += piece.text
    else result.content += piece.text
  }

  return result
}

describe('reasoning parser', () => {
  for (const golden of GOLDEN) {
    describe(golden.name, () => {
      const expected = {content: golden.content, reasoning: golden.reasoning}
      const {output} = golden

      it('splits the whole output', () => expect(run(golden, [output])).to.deep.equal(expected))

      it('splits it streamed a character (UTF-16 unit) at a time', () => expect(run(golden, [...output.split('')])).to.deep.equal(expected))

      it('splits it in two chunks at every point', () => {
        for (let at = 0; at <= output.length; at++) expect(run(golden, [output.slice(0, at), output.slice(at)]), `split at ${at}`).to.deep.equal(expected)
      })

      it('splits it in three chunks at every pair of points', () => {
        for (let first = 0; first <= output.length; first++)
          for (let second = first; second <= output.length; second++)
            expect(run(golden, [output.slice(0, first), output.slice(first, second), output.slice(second)]), `split at ${first} and ${second}`).to.deep.equal(expected)
      })
    })
  }

  it('keeps the order of reasoning and answer within one chunk', () => {
    const parser = new ReasoningParser(THINK_TAGS)
    expect(parser.push('a<think>b</think>c<think>d')).to.deep.equal([
      {reasoning: false, text: 'a'},
      {reasoning: true, text: 'b'},
      {reasoning: false, text: 'c'},
      {reasoning: true, text: 'd'},
    ])
  })
})

describe('reasoning format of a model', () => {
  it("comes from the family's abilities and tags", () => {
    expect(reasoningFormatOf({model_ability: ['chat', 'tools'], model_name: 'qwen2.5-instruct'})).to.equal(undefined)
    expect(reasoningFormatOf({model_ability: ['chat', 'reasoning', 'hybrid'], model_name: 'qwen3', reasoning_end_tag: '</think>', reasoning_start_tag: '<think>'})).to.deep.equal(THINK_TAGS)
    expect(reasoningFormatOf({model_ability: ['chat', 'reasoning'], model_name: 'kimi', reasoning_end_tag: '◁/think▷', reasoning_start_tag: '◁think▷'})).to.deep.equal({
      end: '◁/think▷',
      kind: 'tags',
      start: '◁think▷',
    })
    expect(reasoningFormatOf({model_ability: ['chat', 'reasoning'], model_name: 'gpt-oss'})).to.deep.equal(HARMONY)
  })

  it('is overridden by the launch parameter reasoning_format', () => {
    expect(reasoningFormatOf({model_ability: ['chat'], model_name: 'mine'}, {reasoning_format: 'think'})).to.deep.equal(THINK_TAGS)
    expect(reasoningFormatOf({model_ability: ['chat'], model_name: 'mine'}, {reasoning_format: 'harmony'})).to.deep.equal(HARMONY)
    expect(reasoningFormatOf({model_ability: ['chat', 'reasoning'], model_name: 'qwen3'}, {reasoning_format: 'none'})).to.equal(undefined)
  })
})

describe('reasoning split of a chat stream', () => {
  async function* stream(...events: GenerationEvent[]): AsyncGenerator<GenerationEvent> {
    yield* events
  }

  const collect = async (events: AsyncIterable<GenerationEvent>) => {
    const out: GenerationEvent[] = []
    for await (const event of events) out.push(event)
    return out
  }

  const done: GenerationEvent = {completionTokens: 5, finishReason: 'stop', promptTokens: 3, type: 'done'}

  it("turns the text after a prompt that opened the block into reasoning, and drops the prompt's tail", async () => {
    const events = await collect(
      splitReasoning(stream({promptTail: 'assistant\n<think>\n', promptTokens: 3, type: 'start'}, {text: 'hm </thi', type: 'text'}, {text: 'nk>ok', type: 'text'}, done), THINK_TAGS),
    )
    expect(events).to.deep.equal([{promptTokens: 3, type: 'start'}, {text: 'hm', type: 'reasoning'}, {text: 'ok', type: 'text'}, done])
  })

  it('returns no reasoning when asked not to think, from the text or from the engine', async () => {
    const events = await collect(
      splitReasoning(stream({promptTokens: 3, type: 'start'}, {text: 'x', type: 'reasoning'}, {text: '<think>y</think>z', type: 'text'}, done), THINK_TAGS, false),
    )
    expect(events).to.deep.equal([{promptTokens: 3, type: 'start'}, {text: 'z', type: 'text'}, done])
  })

  it("leaves a model that does not reason as it is, and flushes a held-back tail before the end", async () => {
    expect(await collect(splitReasoning(stream({promptTokens: 1, type: 'start'}, {text: '<think>a', type: 'text'}, done), undefined))).to.deep.equal([
      {promptTokens: 1, type: 'start'},
      {text: '<think>a', type: 'text'},
      done,
    ])
    expect(await collect(splitReasoning(stream({promptTokens: 1, type: 'start'}, {text: 'a <thi', type: 'text'}, done), THINK_TAGS))).to.deep.equal([
      {promptTokens: 1, type: 'start'},
      {text: 'a ', type: 'text'},
      {text: '<thi', type: 'text'},
      done,
    ])
  })
})
