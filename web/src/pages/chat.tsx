/**
 * The chat playground: a conversation streamed from `POST /v1/chat/completions`, rendered as Markdown, with a
 * system prompt, sampling parameters, stop, regenerate and the request as code. A reasoning model's thinking shows
 * folded above its answer, streaming too; it is not sent back with the conversation. Tokens arrive faster than
 * the screen needs them; they are gathered and drawn every REDRAW_MS, so typing stays responsive while a long reply streams.
 */
import {useEffect, useRef, useState} from 'preact/hooks'

import type {ChatMessage} from '../../../src/client/client.js'

import {client, describeError, isAbort, token} from '../api.js'
import {Markdown} from '../markdown.js'
import {SnippetView} from '../snippet-view.js'
import {type Snippets, snippetsOf} from '../snippets.js'
import {ErrorLine} from '../ui.js'
import {SamplingControls, type Sampling, samplingBody} from './sampling.js'

type Turn = {role: 'user' | 'assistant'; content: string; reasoning?: string}

/** A reasoning model's thinking, folded: open it to read. */
function Reasoning({text}: {text?: string}) {
  if (!text) return null
  return (
    <details class="reasoning">
      <summary>Thinking</summary>
      <p class="reasoning-text">{text}</p>
    </details>
  )
}

/** How often a streaming reply is drawn: often enough to read as live, rarely enough that each redraw (a Markdown parse of the whole reply) leaves the page idle for input. */
const REDRAW_MS = 80

export function ChatPlayground({uid}: {uid: string}) {
  const [system, setSystem] = useState('')
  const [sampling, setSampling] = useState<Sampling>({max_tokens: '256', stop: '', temperature: '0.7', top_p: '1'})
  const [turns, setTurns] = useState<Turn[]>([])
  const [draft, setDraft] = useState('')
  const [reply, setReply] = useState<{text: string; reasoning: string} | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [snippets, setSnippets] = useState<Snippets | undefined>(undefined)
  const controller = useRef<AbortController | undefined>(undefined)
  // Leaving the playground (another page, tab or model) stops what it still asks the model.
  useEffect(() => () => controller.current?.abort(), [])

  const send = async (history: Turn[]) => {
    const messages: ChatMessage[] = [...(system.trim() ? [{content: system, role: 'system' as const}] : []), ...history.map(({content, role}) => ({content, role}))]
    const options = samplingBody(sampling)
    setSnippets(snippetsOf('/v1/chat/completions', {model: uid, messages, ...options, stream: true}, token.get() !== undefined))
    setTurns(history)
    setError(undefined)
    const abort = new AbortController()
    controller.current = abort
    let text = ''
    let reasoning = ''
    let refused = false
    let pending: ReturnType<typeof setTimeout> | undefined
    setReply({reasoning: '', text: ''})
    try {
      for await (const chunk of client.model(uid).chatStream(messages, options, abort.signal)) {
        text += chunk.choices[0]?.delta?.content ?? ''
        reasoning += chunk.choices[0]?.delta?.reasoning_content ?? ''
        pending ??= setTimeout(() => {
          pending = undefined
          setReply({reasoning, text})
        }, REDRAW_MS)
      }
    } catch (failure) {
      refused = !isAbort(failure)
      if (refused) setError(describeError(failure))
    } finally {
      clearTimeout(pending)
      controller.current = undefined
      setReply(undefined)
      // A request refused before any text (the model is gone, a bad parameter) got no reply: the error line says why.
      setTurns(refused && !text && !reasoning ? history : [...history, {content: text, role: 'assistant', ...(reasoning ? {reasoning} : {})}])
    }
  }

  const submit = (event: Event) => {
    event.preventDefault()
    if (!draft.trim() || controller.current) return
    const history = [...turns, {content: draft, role: 'user' as const}]
    setDraft('')
    void send(history)
  }

  const regenerate = () => {
    const lastUser = turns.findLastIndex((turn) => turn.role === 'user')
    if (lastUser >= 0) void send(turns.slice(0, lastUser + 1))
  }

  const streaming = reply !== undefined
  return (
    <div class="playground chat">
      <aside class="settings">
        <label>
          System prompt
          <textarea onInput={(event) => setSystem(event.currentTarget.value)} rows={3} value={system} />
        </label>
        <SamplingControls onChange={setSampling} value={sampling} />
      </aside>
      <div class="conversation">
        <ol aria-busy={streaming} aria-label="Conversation" aria-live="polite" class="messages">
          {turns.map((turn, index) => (
            <li class={turn.role} key={index}>
              <span class="role">{turn.role}</span>
              {turn.role === 'assistant' ? (
                <>
                  <Reasoning text={turn.reasoning} />
                  <Markdown text={turn.content} />
                </>
              ) : (
                <p class="user-text">{turn.content}</p>
              )}
            </li>
          ))}
          {streaming && (
            <li class="assistant streaming">
              <span class="role">assistant</span>
              <Reasoning text={reply.reasoning} />
              <Markdown streaming text={reply.text} />
            </li>
          )}
        </ol>
        <ErrorLine error={error} />
        <form class="composer" onSubmit={submit}>
          <label class="grow">
            Message
            <textarea
              onInput={(event) => setDraft(event.currentTarget.value)}
              onKeyDown={(event) => {
                if (event.key === 'Enter' && !event.shiftKey) submit(event)
              }}
              placeholder="Write a message; Enter sends, Shift+Enter starts a new line"
              rows={3}
              value={draft}
            />
          </label>
          <div class="buttons">
            {streaming ? (
              <button class="danger" onClick={() => controller.current?.abort()} type="button">
                Stop
              </button>
            ) : (
              <button type="submit">Send</button>
            )}
            <button class="secondary" disabled={streaming || !turns.some((turn) => turn.role === 'user')} onClick={regenerate} type="button">
              Regenerate
            </button>
            <button class="secondary" disabled={streaming} onClick={() => setTurns([])} type="button">
              Clear
            </button>
          </div>
        </form>
        <SnippetView snippets={snippets} />
      </div>
    </div>
  )
}
