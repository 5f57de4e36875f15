import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { AppError } from '../../core/errors.ts';
import { TRANSIENT_RETRY_AFTER_SECONDS } from '../../core/errors.ts';
import { rejectOtherMethods } from '../method-not-allowed.ts';

/** How long `/readyz` waits for the database before answering 503. */
const READY_TIMEOUT_MS = 2000;

/**
 * `GET /healthz` (process alive, whatever the database does), `GET /readyz` (the database
 * answers, and with a multi-host `DATABASE_URL` it is the writable primary; else
 * `503 database_unavailable`) and
 * `GET /metrics` (Prometheus text format). On any host, without a key.
 * Source: docs/contract.md Part B, Running and "A highly available database".
 */
export async function operationsRoutes(
  app: FastifyInstance,
  options: { ping: () => Promise<void>; metrics: Registry },
): Promise<void> {
  const hidden = { hide: true };
  app.get('/healthz', { schema: hidden }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: hidden }, async () => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS);
    });
    try {
      await Promise.race([options.ping(), timeout]);
    } catch {
      // No primary (or no answer) within the limit: a load balancer takes this replica out.
      throw new AppError('database_unavailable', 'The database does not answer, or no writable server is reachable.', undefined, {
        'retry-after': String(TRANSIENT_RETRY_AFTER_SECONDS),
      });
    } finally {
      clearTimeout(timer);
    }
    return { status: 'ready' };
  });
  app.get('/metrics', { schema: hidden }, async (_request, reply) =>
    reply.type(options.metrics.contentType).send(await options.metrics.metrics()),
  );
  for (const url of ['/healthz', '/readyz', '/metrics']) rejectOtherMethods(app, url, ['GET']);
}
