/** Playgrounds: pick a ready model, then use each thing its type and abilities offer. */
import {useRef, useState} from 'preact/hooks'
import {useLocation} from 'preact-iso'

import type {RunningModel} from '../../../src/client/client.js'

import {client} from '../api.js'
import {ErrorLine, Tabs, useLoad} from '../ui.js'
import {ChatPlayground} from './chat.js'
import {ImagePlayground} from './image-playground.js'
import {SpeechPlayground, TranscriptionPlayground} from './media.js'
import {CompletionPlayground, EmbeddingPlayground, RerankPlayground} from './retrieval.js'

/** The playgrounds a model offers, by its type and abilities; audio and image ones follow OpenAI's shapes. */
function playgroundsOf(model: RunningModel) {
  const abilities = new Set(model.model_ability)
  const uid = model.id
  return [
    {label: 'Chat', offered: abilities.has('chat'), view: () => <ChatPlayground uid={uid} />},
    {label: 'Completions', offered: abilities.has('generate'), view: () => <CompletionPlayground uid={uid} />},
    {label: 'Embeddings', offered: model.model_type === 'embedding', view: () => <EmbeddingPlayground uid={uid} />},
    {label: 'Rerank', offered: model.model_type === 'rerank', view: () => <RerankPlayground uid={uid} />},
    {label: 'Transcribe', offered: abilities.has('audio2text'), view: () => <TranscriptionPlayground uid={uid} />},
    {label: 'Speak', offered: abilities.has('text2audio'), view: () => <SpeechPlayground model={model} />},
    {label: 'Image', offered: abilities.has('text2image') || abilities.has('image2image'), view: () => <ImagePlayground model={model} />},
  ].filter((playground) => playground.offered)
}

/** Why the model a playground shows can no longer be asked: it left the list, or is listed but not ready. */
function goneNotice(uid: string, listed: RunningModel | undefined): string {
  if (!listed) return `${uid} is no longer running: it was terminated, or its worker left. Choose another model, or launch it again.`
  const reason = listed.error ?? listed.last_error
  return `${uid} is no longer ready: its status is ${listed.status}${reason ? ` (${reason})` : ''}. Choose another model, or wait for it to be ready.`
}

export function PlaygroundPage({uid}: {uid?: string}) {
  const location = useLocation()
  // Models are launched and terminated elsewhere (another tab, servicectl): the list is loaded again when the picker
  // is used and when the tab is shown again, which keeps it current without polling while the page is in use.
  const models = useLoad(() => client.list(), [], {whenShown: true})
  const [tab, setTab] = useState<string | undefined>(undefined)
  const listed = models.data ?? []
  const ready = listed.filter((model) => model.status === 'ready')
  const current = ready.find((candidate) => candidate.id === uid)
  // A model that goes away keeps its playground, and with it the conversation; a request then shows the service's answer.
  const lastSeen = useRef<RunningModel | undefined>(undefined)
  if (current) lastSeen.current = current
  const model = current ?? (lastSeen.current?.id === uid ? lastSeen.current : undefined)
  const playgrounds = model ? playgroundsOf(model) : []
  const shown = playgrounds.find((playground) => playground.label === tab) ?? playgrounds[0]
  // Focus loads the list when the picker is reached; a click on the picker that has it already, to open it again, loads it too.
  const reloadOnReopen = (event: MouseEvent) => {
    if (document.activeElement === event.currentTarget) void models.reload()
  }

  return (
    <section>
      <h1>Playground</h1>
      <ErrorLine error={models.error} />
      <label class="inline">
        Model
        <select
          onChange={(event) => location.route(`/ui/playground/${encodeURIComponent(event.currentTarget.value)}`)}
          onFocus={() => void models.reload()}
          onMouseDown={reloadOnReopen}
          value={uid ?? ''}
        >
          <option disabled value="">
            choose a running model
          </option>
          {ready.map((candidate) => (
            <option key={candidate.id} value={candidate.id}>
              {candidate.id} ({candidate.model_type})
            </option>
          ))}
          {model && !current && (
            <option disabled value={model.id}>
              {model.id} (no longer ready)
            </option>
          )}
        </select>
      </label>
      {model && !current && <ErrorLine error={goneNotice(model.id, listed.find((candidate) => candidate.id === model.id))} />}
      {models.data && ready.length === 0 && !model && (
        <p>
          No model is ready. <a href="/ui/">Launch one</a>.
        </p>
      )}
      {models.data && uid && !model && <p class="error">No ready model has the uid {uid}.</p>}
      {model && playgrounds.length === 0 && <p>This model ({model.model_type}, abilities {model.model_ability.join(', ')}) has no playground here yet.</p>}
      {playgrounds.length > 1 && (
        <Tabs label="Playground" onChange={setTab} options={playgrounds.map(({label}) => [label, label])} value={shown?.label} />
      )}
      {shown && <div key={`${uid}/${shown.label}`}>{shown.view()}</div>}
    </section>
  )
}
