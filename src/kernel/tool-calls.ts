/**
 * Tool calls split from a model's text as it streams, for engines whose output is the model's raw text (the
 * transformers host, an OpenAI server started without its own parser): Hermes/Qwen `<tool_call>{json}</tool_call>`,
 * Llama 3.x JSON (`{"name": …, "parameters": …}`, after `<|python_tag|>` or as the whole answer) and Mistral
 * `[TOOL_CALLS][{…}]`. Like the reasoning split (reasoning.ts) it is pure and incremental: chunks may end anywhere,
 * inside a marker too. A call's JSON is held until it is whole, so a call whose JSON does not parse comes back as the
 * text it was, never as half a call; a whole one is announced (`tool_call`), then its arguments (`tool_arguments`).
 * Hermes' calls are the exception, streamed as OpenAI streams them: once `{"name": "…", "arguments": ` is read, the
 * call is announced and its arguments' text follows as the model writes it, so a client sees a long call grow. Such a
 * call is then kept whatever follows, as OpenAI's and vLLM's are: one cut short ends with the arguments written so far.
 */
import type {GenerationEvent} from './generation.js'

import {MarkerScanner, type MarkerToken} from './marker-scanner.js'

export type ToolCallFormat = 'hermes' | 'llama3_json' | 'mistral'

export const TOOL_CALL_FORMATS: readonly ToolCallFormat[] = ['hermes', 'llama3_json', 'mistral']

interface ParsedCall {
  name: string
  arguments: string
}

interface FormatRules {
  /** Markers that open a call. */
  opens: string[]
  /** The marker that closes one; without it, a call runs to the next opening marker or the end of the output. */
  close?: string
  /** Whether an answer whose first visible character is `{` is a call (Llama 3's JSON calls have no marker). */
  bareJson?: boolean
  /** What a call's JSON starts with once its name is known and its arguments object begins; its arguments then stream. */
  namedArguments?: RegExp
  parse(body: string): ParsedCall[] | undefined
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** `{"name": …, "arguments" | "parameters": {…}}` as a call; arguments given as JSON text are kept as they are. */
function callOf(value: unknown): ParsedCall | undefined {
  if (!isObject(value) || typeof value.name !== 'string' || !value.name) return undefined
  const args = value.arguments ?? value.parameters ?? {}
  if (typeof args === 'string') return {arguments: args, name: value.name}
  return isObject(args) ? {arguments: JSON.stringify(args), name: value.name} : undefined
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** One call, or a list of them; undefined when any of them is not one. */
function callsOf(value: unknown): ParsedCall[] | undefined {
  const list = Array.isArray(value) ? value : [value]
  const calls = list.map((item) => callOf(item))
  return calls.length > 0 && calls.every(Boolean) ? (calls as ParsedCall[]) : undefined
}

/** Mistral's newer form, `[TOOL_CALLS]name[ARGS]{…}`, beside the JSON list of its v0.3 templates. */
const MISTRAL_NAMED = /^\s*([\w.-]{1,64})\[ARGS\]([\s\S]*)$/

const RULES: Record<ToolCallFormat, FormatRules> = {
  hermes: {
    close: '</tool_call>',
    // The name as JSON text, bounded as OpenAI bounds function names; arguments given as a string or first wait for the whole call.
    namedArguments: /^\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.){1,64}")\s*,\s*"(?:arguments|parameters)"\s*:\s*(?=\{)/,
    opens: ['<tool_call>'],
    parse: (body) => callsOf(parseJson(body)),
  },
  // Several calls are separated by semicolons, as Llama 3.2's template asks for them.
  llama3_json: {
    bareJson: true,
    opens: ['<|python_tag|>'],
    parse(body) {
      const whole = callsOf(parseJson(body))
      if (whole) return whole
      const parts = body.split(/;\s*(?=\{)/).map((part) => callOf(parseJson(part)))
      return parts.length > 1 && parts.every(Boolean) ? (parts as ParsedCall[]) : undefined
    },
  },
  mistral: {
    opens: ['[TOOL_CALLS]'],
    parse(body) {
      const named = MISTRAL_NAMED.exec(body)
      if (!named) return callsOf(parseJson(body))
      const args = parseJson(named[2])
      return isObject(args) ? [{arguments: JSON.stringify(args), name: named[1]}] : undefined
    },
  },
}

/** Where a JSON object ends, read a piece at a time: the object's characters pass, what follows it does not. */
class JsonObjectEnd {
  private depth = 0
  private inString = false
  private escaped = false
  ended = false

  /** The part of `text` that belongs to the object, all of it until the object closes. */
  take(text: string): string {
    for (let at = 0; at < text.length && !this.ended; at++) {
      const character = text[at]
      if (this.inString) {
        if (this.escaped) this.escaped = false
        else if (character === '\\') this.escaped = true
        else if (character === '"') this.inString = false
      } else if (character === '"') this.inString = true
      else if (character === '{' || character === '[') this.depth++
      else if ((character === '}' || character === ']') && --this.depth === 0) {
        this.ended = true
        return text.slice(0, at + 1)
      }
    }

    return this.ended ? '' : text
  }
}

const LEADING_SPACE = /^\s*/
const TRAILING_SPACE = /\s*$/

export class ToolCallParser {
  private readonly rules: FormatRules
  private readonly scanner: MarkerScanner
  private inCall = false
  /** The marker (or, for a bare JSON call, the white space before it) that opened the call being read. */
  private opener = ''
  private body = ''
  /** The arguments of the call being streamed (namedArguments), once its name was announced. */
  private streamed?: JsonObjectEnd
  /** Calls made so far, which number the next. */
  private calls = 0
  /** Whether any answer text or call has come yet: only the first thing may be a bare JSON call. */
  private begun = false
  /** White space after the last text, kept back: dropped before and after a call, passed on before more text. */
  private heldSpace = ''
  /** Whether a call came last, so the text that follows starts without the white space between. */
  private afterCall = false

  constructor(format: ToolCallFormat) {
    this.rules = RULES[format]
    this.scanner = new MarkerScanner([...this.rules.opens, ...(this.rules.close ? [this.rules.close] : [])])
  }

  /** The events a chunk of output settles; a possible marker at its end, or a call still open, waits. */
  push(chunk: string): GenerationEvent[] {
    const tokens: MarkerToken[] = []
    this.scanner.push(chunk, tokens)
    return this.take(tokens, [])
  }

  /** What was held back when the output ends: an open call's JSON is parsed as it is, or given back as text. */
  finish(): GenerationEvent[] {
    const tokens: MarkerToken[] = []
    this.scanner.flush(tokens)
    const out = this.take(tokens, [])
    if (this.inCall) this.closeCall(false, out)
    if (this.heldSpace && this.calls === 0) pushText(out, this.heldSpace)
    this.heldSpace = ''
    return out
  }

  private take(tokens: MarkerToken[], out: GenerationEvent[]): GenerationEvent[] {
    for (const token of tokens) {
      if ('text' in token) {
        if (this.streamed) this.streamArguments(token.text, out)
        else if (this.inCall) {
          this.body += token.text
          this.announceNamed(out)
        } else this.text(token.text, out)
      } else if (token.marker === this.rules.close) {
        if (this.inCall) this.closeCall(true, out)
        else this.text(token.marker, out)
      } else {
        if (this.inCall) this.closeCall(false, out)
        // The white space before it goes with the call: back into the text if the call does not parse.
        this.openCall(this.heldSpace + token.marker)
      }
    }

    return out
  }

  private openCall(opener: string, body = ''): void {
    this.inCall = true
    this.begun = true
    this.opener = opener
    this.body = body
    this.heldSpace = ''
  }

  /** Announces the call being read once its name is known and its arguments object begins, and streams what came of them. */
  private announceNamed(out: GenerationEvent[]): void {
    const named = this.rules.namedArguments?.exec(this.body)
    // A name whose escapes are not JSON's leaves the call to be parsed whole, and given back as text.
    const name = named && parseJson(named[1])
    if (typeof name !== 'string' || !name) return
    out.push({index: this.calls, name, type: 'tool_call'})
    this.streamed = new JsonObjectEnd()
    this.streamArguments(this.body.slice(named![0].length), out)
  }

  /** Passes on the arguments' text; what the model writes after them, up to the closing marker, is not part of the call. */
  private streamArguments(text: string, out: GenerationEvent[]): void {
    const piece = this.streamed!.take(text)
    if (piece) out.push({index: this.calls, text: piece, type: 'tool_arguments'})
  }

  private closeCall(closed: boolean, out: GenerationEvent[]): void {
    this.inCall = false
    if (this.streamed) {
      this.streamed = undefined
      this.calls++
      this.afterCall = true
      this.heldSpace = ''
      return
    }

    const calls = this.rules.parse(this.body)
    if (!calls) {
      this.text(this.opener + this.body + (closed ? this.rules.close : ''), out)
      return
    }

    for (const call of calls) {
      out.push({index: this.calls, name: call.name, type: 'tool_call'}, {index: this.calls, text: call.arguments, type: 'tool_arguments'})
      this.calls++
    }

    this.afterCall = true
    this.heldSpace = ''
  }

  private text(text: string, out: GenerationEvent[]): void {
    const rest = this.heldSpace + text
    const leading = LEADING_SPACE.exec(rest)![0]
    if (leading.length === rest.length) {
      this.heldSpace = rest
      return
    }

    if (!this.begun && this.rules.bareJson && rest[leading.length] === '{') {
      this.openCall(leading, rest.slice(leading.length))
      return
    }

    this.begun = true
    const trailing = TRAILING_SPACE.exec(rest)![0]
    const shown = this.afterCall ? rest.slice(leading.length, rest.length - trailing.length) : rest.slice(0, rest.length - trailing.length)
    this.afterCall = false
    this.heldSpace = trailing
    pushText(out, shown)
  }
}

function pushText(out: GenerationEvent[], text: string): void {
  if (!text) return
  const last = out.at(-1)
  if (last?.type === 'text') last.text += text
  else out.push({text, type: 'text'})
}

/**
 * A chat's events with the tool calls in its text split out, numbered after any the engine announced itself; a reply
 * that made calls and stopped of itself ends with `tool_calls`, as OpenAI's does.
 */
export async function* splitToolCalls(events: AsyncIterable<GenerationEvent>, format: ToolCallFormat): AsyncGenerator<GenerationEvent> {
  const parser = new ToolCallParser(format)
  const numbers = new Map<string, number>()
  const numbered = (source: string, index: number) => {
    const key = `${source}:${index}`
    if (!numbers.has(key)) numbers.set(key, numbers.size)
    return numbers.get(key)!
  }

  const parsed = function* (found: GenerationEvent[]): Generator<GenerationEvent> {
    for (const event of found) yield event.type === 'tool_call' || event.type === 'tool_arguments' ? {...event, index: numbered('text', event.index)} : event
  }

  for await (const event of events) {
    if (event.type === 'text') yield* parsed(parser.push(event.text))
    else if (event.type === 'tool_call' || event.type === 'tool_arguments') yield {...event, index: numbered('engine', event.index)}
    else if (event.type === 'done') {
      yield* parsed(parser.finish())
      yield numbers.size > 0 && event.finishReason === 'stop' ? {...event, finishReason: 'tool_calls'} : event
    } else yield event
  }
}
