#!/usr/bin/env node
// The image's health check (HEALTHCHECK, and the Kubernetes chart's worker probe): exits 0 when the service answers
// its health route within 4 s. The URL is the argument, else SERVICE_HEALTH_URL, else /health on 127.0.0.1 and
// SERVICE_PORT (9997). A worker's route (/v1/worker/health) answers only to the cluster token, sent when set.
const url = process.argv[2] ?? process.env.SERVICE_HEALTH_URL ?? `http://127.0.0.1:${process.env.SERVICE_PORT ?? 9997}/health`
const token = new URL(url).pathname.startsWith('/v1/worker/') ? process.env.SERVICE_CLUSTER_TOKEN : undefined
try {
  const response = await fetch(url, {headers: token ? {authorization: `Bearer ${token}`} : {}, signal: AbortSignal.timeout(4000)})
  process.exit(response.ok ? 0 : 1)
} catch {
  process.exit(1)
}
