/** Cluster: the mode, and each worker with its state, resources and models. */
import {client} from '../api.js'
import {ErrorLine, formatBytes, Table, useLoad} from '../ui.js'

const REFRESH_MS = 5000

interface Resources {
  cpu_count?: number
  memory_free_bytes?: number
  memory_total_bytes?: number
  gpus?: Array<{index?: number; name?: string; memory_free_bytes?: number; memory_total_bytes?: number}>
}

export function ClusterPage() {
  const info = useLoad(() => client.clusterInfo(), [], {everyMs: REFRESH_MS})
  const workers = useLoad(() => client.workers(), [], {everyMs: REFRESH_MS})
  return (
    <section>
      <h1>Cluster</h1>
      <ErrorLine error={info.error ?? workers.error} />
      {info.data && (
        <p>
          {info.data.mode === 'local' ? 'One service-local process' : 'A supervisor with workers'} · version {info.data.version} · {info.data.models} models · {info.data.workers.ready}{' '}
          workers ready, {info.data.workers.lost} lost
        </p>
      )}
      {workers.data && (
        <Table headings={['Worker', 'Address', 'State', 'CPUs', 'Memory free', 'GPUs', 'Models', 'Last seen']}>
          {workers.data.map((worker) => {
            const resources = worker.resources as Resources
            return (
              <tr key={worker.id}>
                <th scope="row">{worker.id}</th>
                <td>{worker.address ?? 'in this process'}</td>
                <td>
                  <span class={`status ${worker.state}`}>{worker.state}</span>
                </td>
                <td>{resources.cpu_count ?? '—'}</td>
                <td>{resources.memory_total_bytes ? `${formatBytes(resources.memory_free_bytes ?? 0)} of ${formatBytes(resources.memory_total_bytes)}` : '—'}</td>
                <td>
                  {resources.gpus?.length
                    ? resources.gpus.map((gpu) => `${gpu.index ?? ''} ${gpu.name ?? 'GPU'} ${gpu.memory_total_bytes ? formatBytes(gpu.memory_total_bytes) : ''}`).join('; ')
                    : 'none'}
                </td>
                <td>{worker.models.join(', ') || '—'}</td>
                <td>{new Date(worker.last_seen).toLocaleTimeString()}</td>
              </tr>
            )
          })}
        </Table>
      )}
    </section>
  )
}
