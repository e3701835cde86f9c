/**
 * The reasoning of a thinking model, split from its answer as the text streams: `<think>…</think>` (Qwen3, QwQ,
 * DeepSeek-R1 and its distills, or whatever tags a family names) and gpt-oss's harmony channels (`analysis` is
 * reasoning, `final` the answer). Pure and incremental: chunks may end anywhere, inside a marker too, so a tail that
 * could begin a marker is held back until the next chunk settles it. Each chunk costs a few `indexOf` calls.
 */
import type {ChatPayload, GenerationEvent} from './generation.js'

import {MarkerScanner, type MarkerToken as Token} from './marker-scanner.js'
import {splitToolCalls, type ToolCallFormat} from './tool-calls.js'

export type ReasoningFormat = {kind: 'tags'; start: string; end: string} | {kind: 'harmony'}

/** A stretch of output, reasoning or answer, in the order it was generated. */
export interface ReasoningPiece {
  reasoning: boolean
  text: string
}

export const THINK_TAGS = {end: '</think>', kind: 'tags', start: '<think>'} as const

/**
 * How a model's output carries its reasoning: the launch's `reasoning_format` when given, else its family's
 * (`reasoning` among its abilities: harmony for gpt-oss, else its `reasoning_start_tag`/`reasoning_end_tag`,
 * `<think>`/`</think>` by default); undefined for a model that does not reason.
 */
export function reasoningFormatOf(family: {model_name?: string; model_ability?: string[]; [field: string]: unknown}, parameters: Record<string, unknown> = {}): ReasoningFormat | undefined {
  const chosen = parameters.reasoning_format
  if (chosen === 'none') return undefined
  if (chosen === 'harmony' || (chosen === undefined && family.model_ability?.includes('reasoning') && /gpt-oss/i.test(family.model_name ?? ''))) return {kind: 'harmony'}
  if (chosen !== 'think' && !family.model_ability?.includes('reasoning')) return undefined
  const start = typeof family.reasoning_start_tag === 'string' && family.reasoning_start_tag ? family.reasoning_start_tag : THINK_TAGS.start
  const end = typeof family.reasoning_end_tag === 'string' && family.reasoning_end_tag ? family.reasoning_end_tag : THINK_TAGS.end
  return {end, kind: 'tags', start}
}

const LEADING_SPACE = /^\s+/
const TRAILING_SPACE = /\s+$/

/** A parser fed through a marker scanner: each chunk's text and whole markers, in order, go to `take`. */
abstract class MarkerParser {
  constructor(private readonly scanner: MarkerScanner) {}

  push(chunk: string, out: ReasoningPiece[]): void {
    const tokens: Token[] = []
    this.scanner.push(chunk, tokens)
    this.take(tokens, out)
  }

  finish(out: ReasoningPiece[]): void {
    const tokens: Token[] = []
    this.scanner.flush(tokens)
    this.take(tokens, out)
  }

  protected abstract take(tokens: Token[], out: ReasoningPiece[]): void
}

/** `<think>…</think>`: reasoning between the tags, without the blank lines templates put around it. */
class TagsParser extends MarkerParser {
  private reasoning = false
  /** At the start of a section, whose leading line breaks are dropped. */
  private sectionStart = false
  /** Trailing white space of the reasoning, kept back in case the end tag follows. */
  private heldSpace = ''

  constructor(private readonly format: {start: string; end: string}) {
    super(new MarkerScanner([format.start, format.end]))
  }

  protected take(tokens: Token[], out: ReasoningPiece[]): void {
    for (const token of tokens) {
      if ('marker' in token) {
        const opens = token.marker === this.format.start
        if (opens === this.reasoning) {
          this.text(token.marker, out)
          continue
        }

        this.reasoning = opens
        this.sectionStart = true
        this.heldSpace = ''
        continue
      }

      this.text(token.text, out)
    }
  }

  private text(text: string, out: ReasoningPiece[]): void {
    let rest = this.sectionStart ? text.replace(LEADING_SPACE, '') : text
    if (rest) this.sectionStart = false
    if (!this.reasoning) return emit(out, false, rest)
    rest = this.heldSpace + rest
    const space = TRAILING_SPACE.exec(rest)?.[0] ?? ''
    this.heldSpace = space
    emit(out, true, rest.slice(0, rest.length - space.length))
  }
}

const HARMONY_MARKERS = ['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|return|>', '<|call|>', '<|constrain|>']

/**
 * gpt-oss's harmony format: `<|channel|>analysis<|message|>…<|end|>` is reasoning, `final` (and `commentary`, the
 * preamble of tool calls) the answer. Headers (`<|start|>assistant`, the channel name) are dropped.
 */
class HarmonyParser extends MarkerParser {
  private state: 'outside' | 'header' | 'body' = 'outside'
  private header = ''
  private channel = ''

  constructor() {
    super(new MarkerScanner(HARMONY_MARKERS))
  }

  protected take(tokens: Token[], out: ReasoningPiece[]): void {
    for (const token of tokens) {
      if ('text' in token) {
        if (this.state === 'header') this.header += token.text
        else emit(out, this.state === 'body' && this.channel === 'analysis', token.text)
        continue
      }

      switch (token.marker) {
        case '<|start|>':
        case '<|channel|>': {
          this.state = 'header'
          this.header = ''
          break
        }

        case '<|message|>': {
          this.state = 'body'
          this.channel = this.header.trim().split(/[\s<]/)[0]
          break
        }

        case '<|constrain|>': {
          break
        }

        default: {
          this.state = 'outside'
        }
      }
    }
  }
}

function emit(out: ReasoningPiece[], reasoning: boolean, text: string): void {
  if (!text) return
  const last = out.at(-1)
  if (last && last.reasoning === reasoning) last.text += text
  else out.push({reasoning, text})
}

/** How much of the prompt's end `promptTail` carries: enough for any template's opening of a reasoning block. */
export const PROMPT_TAIL_LENGTH = 256

export class ReasoningParser {
  private readonly parser: TagsParser | HarmonyParser

  /**
   * `promptTail`, the end of the rendered prompt, is parsed first and its output dropped: a template that opens the
   * reasoning block in the prompt (DeepSeek-R1's `<think>\n`) starts the answer inside it, one that closes an empty
   * block (Qwen3 with enable_thinking false) starts it in the answer.
   */
  constructor(format: ReasoningFormat, promptTail = '') {
    this.parser = format.kind === 'harmony' ? new HarmonyParser() : new TagsParser(format)
    if (promptTail) this.parser.push(promptTail, [])
  }

  /** The pieces a chunk of output settles; a possible marker at its end waits for the next chunk. */
  push(chunk: string): ReasoningPiece[] {
    const out: ReasoningPiece[] = []
    this.parser.push(chunk, out)
    return out
  }

  /** What was held back when the output ends. */
  finish(): ReasoningPiece[] {
    const out: ReasoningPiece[] = []
    this.parser.finish(out)
    return out
  }
}

/**
 * A chat's events with the reasoning in its text split out as `reasoning` events, by `format` (none: a model that
 * does not reason, whose text passes unchanged). An engine that splits it itself sends `reasoning` events and no
 * `promptTail`. Asked not to think (`thinking` false), the answer has no reasoning, whatever the model does.
 */
export async function* splitReasoning(events: AsyncIterable<GenerationEvent>, format: ReasoningFormat | undefined, thinking = true): AsyncGenerator<GenerationEvent> {
  let parser: ReasoningParser | undefined
  const pieces = function* (found: ReasoningPiece[]): Generator<GenerationEvent> {
    for (const piece of found) {
      if (!piece.reasoning) yield {text: piece.text, type: 'text'}
      else if (thinking) yield {text: piece.text, type: 'reasoning'}
    }
  }

  for await (const event of events) {
    if (event.type === 'start') {
      if (format) parser = new ReasoningParser(format, event.promptTail)
      const announced = {...event}
      delete announced.promptTail
      yield announced
    } else if (event.type === 'text' && format) {
      // An engine that announces no prompt (an OpenAI-compatible server) starts its output outside any block.
      parser ??= new ReasoningParser(format)
      yield* pieces(parser.push(event.text))
    } else if (event.type === 'reasoning') {
      if (thinking) yield event
    } else {
      if (parser && event.type !== 'text') yield* pieces(parser.finish())
      yield event
    }
  }
}

/** What the model process knows of the model it serves, from its load request. */
export interface ServedModel {
  modelType: string
  family: Parameters<typeof reasoningFormatOf>[0]
  parameters: Record<string, unknown>
  /** How its output carries tool calls, when the engine gives its raw text (see tool-calls.ts). */
  toolCallFormat?: ToolCallFormat
}

/**
 * An operation as the model process runs and relays it: a `chat` of an LLM thinks as the launch's `enable_thinking`
 * says (Xinference's launch option) unless the request says, its reasoning is split out (see splitReasoning), then,
 * when it was given tools it may call, its tool calls (see splitToolCalls); every other operation is run unchanged.
 * The one place both kinds of engine, Node hosts and external programs, get them.
 */
export function relayedOperation(model: ServedModel, operation: string, payload: unknown, run: (payload: unknown) => AsyncIterable<unknown>): AsyncIterable<unknown> {
  if (operation !== 'chat' || model.modelType !== 'LLM') return run(payload)
  const launched = model.parameters.enable_thinking
  const chat = payload as ChatPayload
  const thinking = chat.enableThinking ?? (typeof launched === 'boolean' ? launched : undefined)
  const events = run(thinking === chat.enableThinking ? payload : {...chat, enableThinking: thinking}) as AsyncIterable<GenerationEvent>
  const format = reasoningFormatOf(model.family, model.parameters)
  // Nothing to split or drop: the events go on without another step between the engine and the outbox.
  const answer = !format && thinking !== false ? events : splitReasoning(events, format, thinking !== false)
  const callsTools = model.toolCallFormat && chat.tools?.length && chat.toolChoice !== 'none'
  return callsTools ? splitToolCalls(answer, model.toolCallFormat!) : answer
}

/**
 * What a loaded model says it can do, with `reasoning` (and its family's `hybrid`) when its chat output is split, as
 * Xinference lists them: an engine that names its abilities (chat only with a template) knows nothing of reasoning.
 */
export function withReasoningAbilities(abilities: string[] | undefined, request: ServedModel): string[] | undefined {
  if (!abilities?.includes('chat') || request.modelType !== 'LLM' || !reasoningFormatOf(request.family, request.parameters)) return abilities
  const added = ['reasoning', ...(request.family.model_ability?.includes('hybrid') ? ['hybrid'] : [])].filter((ability) => !abilities.includes(ability))
  return [...abilities, ...added]
}
