/** Playgrounds: pick a ready model, then use each thing its type and abilities offer. */
import {useState} from 'preact/hooks'
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

export function PlaygroundPage({uid}: {uid?: string}) {
  const location = useLocation()
  const models = useLoad(() => client.list())
  const [tab, setTab] = useState<string | undefined>(undefined)
  const ready = (models.data ?? []).filter((model) => model.status === 'ready')
  const model = ready.find((candidate) => candidate.id === uid)
  const playgrounds = model ? playgroundsOf(model) : []
  const shown = playgrounds.find((playground) => playground.label === tab) ?? playgrounds[0]

  return (
    <section>
      <h1>Playground</h1>
      <ErrorLine error={models.error} />
      <label class="inline">
        Model
        <select onChange={(event) => location.route(`/ui/playground/${encodeURIComponent(event.currentTarget.value)}`)} value={uid ?? ''}>
          <option disabled value="">
            choose a running model
          </option>
          {ready.map((candidate) => (
            <option key={candidate.id} value={candidate.id}>
              {candidate.id} ({candidate.model_type})
            </option>
          ))}
        </select>
      </label>
      {models.data && ready.length === 0 && (
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
