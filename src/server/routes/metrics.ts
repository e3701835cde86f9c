/**
 * `GET /metrics`: the service's metrics in Prometheus' text format (see server/metrics.ts). With access control
 * on it needs `metrics:read`, which a scrape credential can hold alone, or `admin`.
 */
import type {RouteDefinition} from '../../kernel/contracts.js'
import type {MetricsExposition} from '../metrics.js'

export function metricsRoutes(metrics: MetricsExposition): RouteDefinition[] {
  return [
    {
      async handler() {
        const {body, contentType} = await metrics.render()
        return {body, headers: {'Content-Type': contentType}, kind: 'json'}
      },
      method: 'GET',
      path: '/metrics',
      permission: 'metrics:read',
      produces: 'text/plain',
      response: {description: "Prometheus' text exposition format (text/plain; version=0.0.4).", type: 'string'},
      summary: 'Metrics in Prometheus text format: requests, tokens and latencies per model, workers, downloads, the process',
      tag: 'service',
    },
  ]
}
