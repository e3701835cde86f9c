/**
 * Scrapes a service's `GET /metrics` and reads it with a Prometheus text parser (parse-prometheus-text-format), so
 * tests check what Prometheus would store rather than the service's own idea of its output.
 */
import {expect} from 'chai'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'

export interface Sample {
  labels?: Record<string, string>
  value?: string
}

/** Metric families by name; a histogram's `_bucket`, `_count` and `_sum` are also families of their own. */
export type Families = Map<string, {type: string; metrics: Sample[]}>

export async function scrapeMetrics(url: string, headers: Record<string, string> = {}): Promise<Families> {
  const response = await fetch(`${url}/metrics`, {headers})
  expect(response.status).to.equal(200)
  expect(response.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/)
  const text = await response.text()
  // The parser folds a histogram's series into one sample and keeps the labels only of histograms that have none;
  // read again without their TYPE lines, a labelled histogram's `_bucket`, `_count` and `_sum` are series of their own.
  const parse = (exposition: string) => parsePrometheusTextFormat(exposition) as Array<{name: string; type: string; metrics: Sample[]}>
  const families: Families = new Map(parse(text).map(({metrics, name, type}) => [name, {metrics, type}]))
  const typed = new Set(families.keys())
  for (const {metrics, name} of parse(text.replaceAll(/^# TYPE \S+ histogram$/gm, '')))
    if (!typed.has(name)) families.set(name, {metrics: [...(families.get(name)?.metrics ?? []), ...metrics], type: 'UNTYPED'})
  return families
}

/** The one sample of a series whose labels include these (an absent label reads as empty), as a number. */
export function sampleValue(families: Families, name: string, labels: Record<string, string> = {}): number {
  const series = families.get(name)
  expect(series, name).to.not.equal(undefined)
  const matching = series!.metrics.filter((sample) => Object.entries(labels).every(([key, wanted]) => (sample.labels?.[key] ?? '') === wanted))
  expect(matching, `${name} ${JSON.stringify(labels)}`).to.have.length(1)
  return Number(matching[0].value)
}
