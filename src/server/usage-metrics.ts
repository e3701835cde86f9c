/**
 * The metrics of what the workers measure and report (worker-usage.ts): each instance's engine sequences and waiting
 * requests, the memory and CPU time of each model process and of each worker's own, and each worker's downloads. They
 * are read from the workers' last reports when Prometheus scrapes, so a cluster's supervisor serves every worker's.
 */

import type {ReportedInstance, WorkerStatus} from '../protocol/worker.js'

import {Counter, Gauge, type Registry} from './prom-client.js'

type ReportedWorker = Pick<WorkerStatus, 'id' | 'resources'>
type Sample = [Record<string, string>, number]

export interface UsageSources {
  instances: () => ReportedInstance[]
  workers: () => ReportedWorker[]
}

/** A gauge, or a counter that only ever grows, whose samples are read at each scrape. */
function scraped(kind: 'counter' | 'gauge', registry: Registry, name: string, help: string, labelNames: string[], samples: () => Sample[]): void {
  const configuration = {
    collect(this: Counter | Gauge) {
      this.reset()
      for (const [labels, value] of samples()) this.inc(labels, value)
    },
    help,
    labelNames,
    name,
    registers: [registry],
  }
  if (kind === 'counter') new Counter(configuration)
  else new Gauge(configuration)
}

/** Sums a field over the instances of each model that report it. */
function perModel(instances: ReportedInstance[], field: 'requests_waiting' | 'sequences_in_use' | 'sequences_total'): Map<string, number> {
  const sums = new Map<string, number>()
  for (const {model, usage} of instances) if (usage[field] !== undefined) sums.set(model, (sums.get(model) ?? 0) + usage[field])
  return sums
}

/** Requests waiting for a sequence, by model: what `vllm:num_requests_running` leaves out of the requests in flight. */
export function waitingByModel(instances: ReportedInstance[]): Map<string, number> {
  return perModel(instances, 'requests_waiting')
}

export function usageSeries(registry: Registry, sources: UsageSources): void {
  const byModel = (field: Parameters<typeof perModel>[1]) => () => [...perModel(sources.instances(), field)].map(([model, value]): Sample => [{model_name: model}, value])
  const model = ['model_name']
  scraped('gauge', registry, 'vllm:num_requests_waiting', 'Number of requests waiting for a sequence of the model (llama.cpp: a slot).', model, byModel('requests_waiting'))
  scraped('gauge', registry, 'service_model_sequences_in_use', "Sequences of the model's engine in use by a request (llama.cpp: busy slots), over its replicas.", model, byModel('sequences_in_use'))
  scraped('gauge', registry, 'service_model_sequences_total', "Sequences the model's engine has (llama.cpp: n_parallel slots), over its replicas.", model, byModel('sequences_total'))

  const processes = (field: 'cpu_seconds' | 'resident_memory_bytes') => () =>
    sources.instances().flatMap(({instance, model, usage, worker}): Sample[] => (usage.process ? [[{instance, model_name: model, worker}, usage.process[field]]] : []))
  const instance = ['model_name', 'worker', 'instance']
  scraped('gauge', registry, 'service_model_process_resident_memory_bytes', "Resident memory of each model process (one per replica), by model and worker.", instance, processes('resident_memory_bytes'))
  scraped('counter', registry, 'service_model_process_cpu_seconds_total', 'CPU time each model process (one per replica) has used, by model and worker.', instance, processes('cpu_seconds'))

  const workers = (samples: (worker: ReportedWorker) => Sample[]) => () => sources.workers().flatMap((worker) => samples(worker).map(([labels, value]): Sample => [{...labels, worker: worker.id}, value]))
  const own = (field: 'cpu_seconds' | 'resident_memory_bytes') => workers(({resources}) => (resources.process ? [[{}, resources.process[field]]] : []))
  scraped('gauge', registry, 'service_worker_process_resident_memory_bytes', "Resident memory of the worker's own service process (in service-local, the service's).", ['worker'], own('resident_memory_bytes'))
  scraped('counter', registry, 'service_worker_process_cpu_seconds_total', "CPU time the worker's own service process has used.", ['worker'], own('cpu_seconds'))
  scraped('counter', registry, 'service_worker_downloads_total', 'Downloads of model weights on the worker, by hub and how they ended (completed, failed, cancelled).', ['worker', 'hub', 'outcome'],
    workers(({resources}) => (resources.downloads ?? []).map(({count, hub, outcome}): Sample => [{hub, outcome}, count])))
  scraped('counter', registry, 'service_worker_download_bytes_total', 'Bytes of model weights the worker fetched from hubs.', ['worker', 'hub'],
    workers(({resources}) => (resources.downloads ?? []).map(({bytes, hub}): Sample => [{hub}, bytes])))
}
