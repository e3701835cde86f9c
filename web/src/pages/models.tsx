/** Running models: what runs where, with terminate, the playground, why a crashed model stopped, and its events. */
import {useState} from 'preact/hooks'

import type {ModelEvent} from '../../../src/protocol/events.js'

import {client} from '../api.js'
import {sizeLabel} from '../catalogue-filters.js'
import {ErrorLine, Table, useAction, useLoad} from '../ui.js'

const REFRESH_MS = 2000

export function ModelsPage() {
  const models = useLoad(() => client.list(), [], {everyMs: REFRESH_MS})
  const terminate = useAction()
  const [eventsOf, setEventsOf] = useState<string | undefined>(undefined)
  const list = models.data ?? []

  return (
    <section>
      <h1>Running models</h1>
      <ErrorLine error={models.error ?? terminate.error} />
      {models.data && list.length === 0 && (
        <p>
          No model runs. <a href="/ui/">Launch one from the catalogue</a>.
        </p>
      )}
      {list.length > 0 && (
        <Table headings={['Uid', 'Type', 'Engine', 'Format', 'Size', 'Quantization', 'Status', 'Worker', 'Replicas', 'Actions']}>
          {list.map((model) => (
            <tr key={model.id}>
              <th scope="row">{model.id}</th>
              <td>{model.model_type}</td>
              <td>{model.model_engine}</td>
              <td>{model.model_format}</td>
              <td>{sizeLabel(model.model_size_in_billions)}</td>
              <td>{model.quantization}</td>
              <td>
                <span class={`status ${model.status}`}>{model.stage && model.status === 'launching' ? `${model.status} (${model.stage})` : model.status}</span>
                {(model.error || model.last_error) && <p class="error">{model.error ?? model.last_error}</p>}
              </td>
              <td>{model.worker}</td>
              <td>{model.replica}</td>
              <td class="actions">
                {model.status === 'ready' && (
                  <a class="button" href={`/ui/playground/${encodeURIComponent(model.id)}`}>
                    Playground
                  </a>
                )}
                <button aria-expanded={eventsOf === model.id} class="secondary" onClick={() => setEventsOf(eventsOf === model.id ? undefined : model.id)} type="button">
                  Events
                </button>
                <button
                  aria-label={`Terminate ${model.id}`}
                  class="danger"
                  disabled={terminate.busy}
                  onClick={() => {
                    // One stray click would otherwise end a model that may have taken minutes to load, and the requests it serves.
                    if (!window.confirm(`Terminate ${model.id}? Requests it is answering fail, and launching it again loads it anew.`)) return
                    void terminate.run(() => client.terminate(model.id)).then(() => models.reload())
                  }}
                  type="button"
                >
                  Terminate
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {eventsOf && <ModelEvents uid={eventsOf} />}
    </section>
  )
}

function ModelEvents({uid}: {uid: string}) {
  const events = useLoad<ModelEvent[]>(() => client.events(uid), [uid], {everyMs: REFRESH_MS})
  return (
    <section class="panel" aria-label={`Events of ${uid}`}>
      <h2>Events of {uid}</h2>
      <ErrorLine error={events.error} />
      <ol class="events">
        {(events.data ?? []).map((event, index) => (
          <li class={event.event_type.toLowerCase()} key={index}>
            <time dateTime={new Date(event.timestamp).toISOString()}>{new Date(event.timestamp).toLocaleTimeString()}</time> <strong>{event.kind}</strong> {event.event_content}
          </li>
        ))}
      </ol>
    </section>
  )
}
