/**
 * The launch form of one catalogue model: engine, format, size and quantization from the engine matrix
 * (`GET /v1/engines/{name}`), the engine's parameters with their meanings, the memory estimate of that choice
 * (`POST /v1/models/memory`), then the launch with its live progress and a cancel.
 */
import type {EngineMatrix, EngineSpecGroup} from '../../../src/protocol/registrations.js'

import {useEffect, useState} from 'preact/hooks'

import {client, describeError} from '../api.js'
import {type CatalogueEntry, type EngineInfo} from '../catalogue.js'
import {sizeLabel} from '../catalogue-filters.js'
import {ErrorLine, formatBytes, useAction, useLoad} from '../ui.js'
import {LaunchProgressView} from './launch-progress.js'

/**
 * The engine matrix split into what the form offers (specs a worker can run) and, for the rest, why not: an engine
 * that cannot run here at all, or specs none of the workers can (their device, memory, what the engine takes).
 */
function offered(answer: EngineMatrix): {runnable: Record<string, EngineSpecGroup[]>; unavailable: string[]} {
  const runnable: Record<string, EngineSpecGroup[]> = {}
  const unavailable: string[] = []
  for (const [engine, rows] of Object.entries(answer)) {
    if (!Array.isArray(rows)) {
      unavailable.push(`${engine}: ${rows}`)
      continue
    }

    for (const row of rows.filter((candidate) => candidate.available === false))
      unavailable.push(`${engine} ${row.model_format} ${sizeLabel(String(row.model_size_in_billions))} (${row.quantizations.join(', ')}): ${row.reason ?? 'no worker can run it.'}`)
    const available = rows.filter((row) => row.available !== false)
    if (available.length > 0) runnable[engine] = available
  }

  return {runnable, unavailable}
}

const first = <T,>(values: T[], current: T | undefined) => (current !== undefined && values.includes(current) ? current : values[0])

export function LaunchForm({engines, entry, modelType}: {engines: EngineInfo[]; entry: CatalogueEntry; modelType: string}) {
  const name = entry.family.model_name
  const matrix = useLoad(async () => offered(await client.engines(name)), [name])
  const [choice, setChoice] = useState<{engine?: string; format?: string; size?: string; quantization?: string}>({})
  const [parameters, setParameters] = useState<Record<string, string>>({})
  const [uid, setUid] = useState('')
  const [replica, setReplica] = useState('1')
  const [downloadHub, setDownloadHub] = useState('')
  const [launched, setLaunched] = useState<string | undefined>(undefined)
  const launch = useAction()

  const engineNames = Object.keys(matrix.data?.runnable ?? {})
  const engine = first(engineNames, choice.engine)
  const rows = (engine && matrix.data?.runnable[engine]) || []
  const format = first([...new Set(rows.map((row) => row.model_format))], choice.format)
  const sizes = [...new Set(rows.filter((row) => row.model_format === format).map((row) => String(row.model_size_in_billions)))]
  const size = first(sizes, choice.size)
  const quantizations = rows.find((row) => row.model_format === format && String(row.model_size_in_billions) === size)?.quantizations ?? []
  const quantization = first(quantizations, choice.quantization)
  const engineInfo = engines.find((candidate) => candidate.name === engine)

  const engineParameters = Object.fromEntries(
    Object.entries(parameters)
      .filter(([, value]) => value !== '')
      .map(([key, value]) => [key, engineInfo?.parameters[key]?.type === 'boolean' ? value === 'true' : ['integer', 'number'].includes(engineInfo?.parameters[key]?.type ?? '') ? Number(value) : value]),
  )
  const request = {
    model_engine: engine,
    model_format: format,
    model_name: name,
    model_size_in_billions: size,
    model_type: modelType,
    quantization,
    ...(downloadHub ? {download_hub: downloadHub as 'huggingface' | 'modelscope'} : {}),
    ...engineParameters,
  }
  const requestKey = JSON.stringify(request)

  const [estimate, setEstimate] = useState<{text?: string; error?: string}>({})
  useEffect(() => {
    if (!engine) return
    let current = true
    client.estimateMemory(request).then(
      (reply) => current && setEstimate({text: `${formatBytes(reply.total_bytes)} (weights ${formatBytes(reply.weights_bytes)}, KV cache ${formatBytes(reply.kv_cache_bytes)} for ${reply.context_length} tokens, overhead ${formatBytes(reply.overhead_bytes)})`}),
      (error) => current && setEstimate({error: describeError(error)}),
    )
    return () => {
      current = false
    }
  }, [requestKey])

  const submit = (event: Event) => {
    event.preventDefault()
    void launch.run(async () => {
      const launchedUid = await client.launch({...request, ...(uid ? {model_uid: uid} : {}), replica: Number(replica)}, {waitReady: false})
      setLaunched(launchedUid)
    })
  }

  const select = (label: string, value: string | undefined, values: string[], key: keyof typeof choice, show = (text: string) => text) => (
    <label>
      {label}
      <select onChange={(event) => setChoice({...choice, [key]: event.currentTarget.value})} value={value}>
        {values.map((option) => (
          <option key={option} value={option}>
            {show(option)}
          </option>
        ))}
      </select>
    </label>
  )

  return (
    <form aria-label={`Launch ${name}`} class="panel launch-form" onSubmit={submit}>
      <h2>Launch {name}</h2>
      <ErrorLine error={matrix.error} />
      {matrix.data && engineNames.length === 0 && matrix.data.unavailable.length === 0 && <p class="error">No installed engine runs {name}: install an engine plugin that supports its formats.</p>}
      {matrix.data && matrix.data.unavailable.length > 0 && (
        <details class="unavailable-engines" open={engineNames.length === 0}>
          <summary>Not offered: the workers cannot run them</summary>
          <ul>
            {matrix.data.unavailable.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
        </details>
      )}
      <div class="grid">
        {select('Engine', engine, engineNames, 'engine')}
        {select('Format', format, [...new Set(rows.map((row) => row.model_format))], 'format')}
        {select('Size', size, sizes, 'size', sizeLabel)}
        {select('Quantization', quantization, quantizations, 'quantization')}
        <label>
          Model uid
          <input onInput={(event) => setUid(event.currentTarget.value)} pattern="[A-Za-z0-9][\w.\-]{0,99}" placeholder={name} value={uid} />
        </label>
        <label>
          Download from
          <select onChange={(event) => setDownloadHub(event.currentTarget.value)} value={downloadHub}>
            <option value="">the service's default</option>
            <option value="huggingface">Hugging Face</option>
            <option value="modelscope">ModelScope</option>
          </select>
        </label>
        <label>
          Replicas
          <input min="1" onInput={(event) => setReplica(event.currentTarget.value)} type="number" value={replica} />
        </label>
      </div>
      {engineInfo && Object.keys(engineInfo.parameters).length > 0 && (
        <details>
          <summary>Engine parameters of {engineInfo.name}</summary>
          <div class="parameters">
            {Object.entries(engineInfo.parameters).map(([key, parameter]) => (
              <label key={key}>
                <code>{key}</code>
                {parameter.type === 'boolean' ? (
                  <select onChange={(event) => setParameters({...parameters, [key]: event.currentTarget.value})} value={parameters[key] ?? ''}>
                    <option value="">default</option>
                    <option value="true">true</option>
                    <option value="false">false</option>
                  </select>
                ) : (
                  <input
                    max={parameter.maximum}
                    min={parameter.minimum}
                    onInput={(event) => setParameters({...parameters, [key]: event.currentTarget.value})}
                    placeholder={parameter.default === undefined ? 'default' : String(parameter.default)}
                    type={parameter.type === 'integer' || parameter.type === 'number' ? 'number' : 'text'}
                    value={parameters[key] ?? ''}
                  />
                )}
                <small>{parameter.description}</small>
              </label>
            ))}
          </div>
        </details>
      )}
      <p aria-live="polite" class="estimate">
        Memory estimate: {estimate.text ?? (estimate.error ? <span class="error">{estimate.error}</span> : 'working it out…')}
      </p>
      <ErrorLine error={launch.error} />
      {launched ? (
        <LaunchProgressView onDone={() => setLaunched(undefined)} uid={launched} />
      ) : (
        <button disabled={launch.busy || !engine} type="submit">
          Launch
        </button>
      )}
    </form>
  )
}
