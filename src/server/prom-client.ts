/**
 * The parts of prom-client the service uses, each required from its own file: prom-client's index also loads
 * its Pushgateway (node:https, hence TLS and crypto, and zlib) and its cluster aggregator, which the service
 * never uses and which held about 5 MB of the idle service's memory.
 */
import {createRequire} from 'node:module'

import type * as PromClient from 'prom-client'

const require = createRequire(import.meta.url)

export const Registry = require('prom-client/lib/registry') as typeof PromClient.Registry
export const Counter = require('prom-client/lib/counter') as typeof PromClient.Counter
export const Gauge = require('prom-client/lib/gauge') as typeof PromClient.Gauge
export const Histogram = require('prom-client/lib/histogram') as typeof PromClient.Histogram
export const collectDefaultMetrics = require('prom-client/lib/defaultMetrics') as typeof PromClient.collectDefaultMetrics
// Each name is also its type, as the package's own exports are.
export type Registry = PromClient.Registry
export type Counter<T extends string = string> = PromClient.Counter<T>
export type Gauge<T extends string = string> = PromClient.Gauge<T>
export type Histogram<T extends string = string> = PromClient.Histogram<T>
