import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import type { LoadShedding } from '../../config/load-config.ts';
import { AppError } from '../../core/errors.ts';
import type { RequestCheck } from '../hooks.ts';

/**
 * Routes never shed: liveness (an orchestrator must not restart a process for being busy)
 * and metrics (the overload must stay observable). `/readyz` is shed, on purpose: a
 * replica under pressure reports itself not ready, so the load balancer drains it.
 */
const NEVER_SHED = new Set(['/healthz', '/metrics']);
/** `Retry-After` of a request refused because the process is shutting down. */
const SHUTDOWN_RETRY_AFTER_SECONDS = 1;
/** Measures of the event loop, as opposed to memory. */
const EVENT_LOOP_MEASURES = new Set(['eventLoopDelay', 'eventLoopUtilization']);

/** What each sampled measure is called in a shed response's detail. */
const MEASURES: Record<string, string> = {
  eventLoopDelay: 'event-loop delay',
  eventLoopUtilization: 'event-loop utilisation',
  heapUsedBytes: 'heap in use',
  rssBytes: 'resident memory',
};

/**
 * The check that answers requests arriving while `app` shuts down (from its `preClose` on)
 * with `503` problem+json, `Retry-After` and `Connection: close`, replacing Fastify's own
 * JSON 503 (`return503OnClosing: false` in app.ts).
 */
export function refuseDuringShutdown(app: FastifyInstance): RequestCheck {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  return (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    throw new AppError('service_unavailable', 'The server is shutting down; retry shortly.', undefined, {
      'retry-after': String(SHUTDOWN_RETRY_AFTER_SECONDS),
    });
  };
}

/**
 * Load shedding (docs/operations.md, "Limits"): when a threshold of {@link LoadShedding} is
 * exceeded — sampled every `sampleIntervalMs` by `@fastify/under-pressure` — a request is
 * refused up front with `503 service_unavailable` problem+json and `Retry-After`, instead of
 * queueing work and growing memory. The event-loop measures are ignored for the first two
 * sample windows after `ready`, which only describe start-up.
 */
export async function registerLoadShedding(app: FastifyInstance, limits: LoadShedding): Promise<void> {

  // The first samples cover start-up itself (compiling every route's schemas on `ready`
  // blocks the loop) and would otherwise shed the first requests of a healthy new process.
  let warmUntil = Number.POSITIVE_INFINITY;
  app.addHook('onReady', async () => {
    warmUntil = Date.now() + 2 * limits.sampleIntervalMs;
  });

  await app.register(underPressure, {
    sampleInterval: limits.sampleIntervalMs,
    maxEventLoopDelay: limits.maxEventLoopDelayMs,
    maxEventLoopUtilization: limits.maxEventLoopUtilization,
    // Utilisation over the last sample, not since start.
    eventLoopUtilizationMode: 'interval',
    maxHeapUsedBytes: limits.maxHeapUsedBytes,
    maxRssBytes: limits.maxRssBytes,
    // Refusal is decided here so it renders as our problem+json; resolving lets the request on.
    pressureHandler: async (request, _reply, type) => {
      if (NEVER_SHED.has(request.routeOptions.url ?? '')) return;
      if (EVENT_LOOP_MEASURES.has(type) && Date.now() < warmUntil) return;
      request.log.warn({ pressure: type }, 'shedding load');
      throw new AppError(
        'service_unavailable',
        `The server is overloaded (${MEASURES[type] ?? type} over its limit); retry after the time in Retry-After.`,
        undefined,
        { 'retry-after': String(limits.retryAfterSeconds) },
      );
    },
  });
}
