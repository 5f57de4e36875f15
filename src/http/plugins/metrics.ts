import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics: `http_requests_total` and `http_request_duration_seconds` by method,
 * route template and status, plus the process defaults, on `registry` (by default one of this
 * app's own, so several apps in one process, as in tests, do not collide). Served by
 * `GET /metrics`.
 */
export function registerMetrics(app: FastifyInstance, registry: Registry = new Registry()): Registry {
  collectDefaultMetrics({ register: registry });
  const labelNames = ['method', 'route', 'status_code'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests, in seconds.',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  // The labelled series of each method, route and status, looked up by one string: prom-client
  // would otherwise hash the label object twice per response (docs/performance.md: ~9 µs a request).
  const series = new Map<string, { count: ReturnType<typeof requests.labels>; time: ReturnType<typeof duration.labels> }>();
  app.addHook('onResponse', (request, reply, done) => {
    // Template, never the raw URL: label values stay few however many emails are seen.
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${reply.statusCode} ${route}`;
    let labelled = series.get(key);
    if (!labelled) {
      const labels = { method: request.method, route, status_code: String(reply.statusCode) };
      labelled = { count: requests.labels(labels), time: duration.labels(labels) };
      series.set(key, labelled);
    }
    labelled.count.inc();
    labelled.time.observe(reply.elapsedTime / 1000);
    done();
  });
  return registry;
}
