/**
 * Cache: the model versions the workers hold, with size, hub and whether complete; delete one. Below them the Python
 * environments engines made, with their size alone and the part hard-linked with other environments.
 */
import {client} from '../api.js'
import {sizeLabel} from '../catalogue-filters.js'
import {ErrorLine, formatBytes, Table, useAction, useLoad} from '../ui.js'

export function CachePage() {
  const cached = useLoad(() => client.cachedModels())
  const remove = useAction()
  const list = cached.data ?? []
  return (
    <section>
      <h1>Cached models</h1>
      <ErrorLine error={cached.error ?? remove.error} />
      {cached.data && list.length === 0 && <p>No weights are cached yet: a launch downloads (or makes) them.</p>}
      {list.length > 0 && (
        <Table headings={['Version', 'Model', 'Format', 'Size', 'Quantization', 'On disk', 'Hub', 'Status', 'Worker', '']}>
          {list.map((entry) => (
            <tr key={`${entry.worker}/${entry.model_version}`}>
              <th scope="row">
                <code>{entry.model_version}</code>
              </th>
              <td>{entry.model_name}</td>
              <td>{entry.model_format}</td>
              <td>{sizeLabel(entry.model_size_in_billions)}</td>
              <td>{entry.quantization}</td>
              <td>{formatBytes(entry.size_bytes + entry.partial_bytes)}</td>
              <td>{entry.hub ? `${entry.hub}${entry.repo ? `: ${entry.repo}` : ''}` : '—'}</td>
              <td>{entry.complete ? 'complete' : `partial (${formatBytes(entry.partial_bytes)} to resume)`}</td>
              <td>{entry.worker}</td>
              <td>
                <button
                  aria-label={`Delete ${entry.model_version}`}
                  class="danger"
                  disabled={remove.busy}
                  onClick={() => void remove.run(() => client.removeCachedModel(entry.model_version)).then(() => cached.reload())}
                  type="button"
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      <PythonEnvironments />
    </section>
  )
}

function PythonEnvironments() {
  const environments = useLoad(() => client.virtualEnvironments())
  const list = environments.data ?? []
  const onDisk = list.reduce((sum, environment) => sum + environment.disk_bytes, 0)
  return (
    <>
      <h2>Python environments</h2>
      <ErrorLine error={environments.error} />
      {environments.data && list.length === 0 && <p>No Python environments: an engine that runs Python makes one at its first launch.</p>}
      {list.length > 0 && (
        <>
          <Table headings={['Name', 'Packages', 'Size', 'Shared with others', 'Models', 'Worker']}>
            {list.map((environment) => (
              <tr key={`${environment.worker}/${environment.name}`}>
                <th scope="row">
                  <code>{environment.name}</code>
                </th>
                <td>{environment.packages.join(' ')}</td>
                <td>{formatBytes(environment.size_bytes)}</td>
                <td>{formatBytes(environment.shared_bytes)}</td>
                <td>{environment.models.join(', ') || '—'}</td>
                <td>{environment.worker}</td>
              </tr>
            ))}
          </Table>
          <p>
            {formatBytes(onDisk)} on disk in all: files hard-linked into several environments count once.
          </p>
        </>
      )}
    </>
  )
}
