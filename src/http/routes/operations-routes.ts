import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { AppError } from '../../core/errors.ts';
import { TRANSIENT_RETRY_AFTER_SECONDS } from '../../core/errors.ts';
import { secretsEqual } from '../../core/api-keys/api-key-secret.ts';
import { absent } from '../plugins/admin-auth.ts';
import { subdomainOf } from '../plugins/tenant.ts';

/** How long `/readyz` waits for the database before answering 503. */
const READY_TIMEOUT_MS = 2000;

/**
 * `GET /healthz` (process alive, whatever the database does), `GET /readyz` (the database
 * answers, and with a multi-host `DATABASE_URL` it is the writable primary; else
 * `503 database_unavailable`) and
 * `GET /metrics` (Prometheus text format). `/healthz` and `/readyz` on any host, without a
 * key; `/metrics` on the operator host (any host that is not `<label>.<BASE_DOMAIN>`), and on a
 * workspace's host only with `Authorization: Bearer <METRICS_TOKEN>` — elsewhere it answers as a
 * path that does not exist (404 `not_found`, whatever the method), so a workspace's users do not
 * read the operator's route counts.
 * Source: docs/contract.md Part B, Running and "A highly available database"; docs/operations.md,
 * "Health, metrics, logs".
 */
export async function operationsRoutes(
  app: FastifyInstance,
  options: { ping: () => Promise<void>; metrics: Registry; baseDomain: string; metricsToken: string | undefined },
): Promise<void> {
  const { baseDomain, metricsToken } = options;
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.url !== '/metrics' || subdomainOf(request.hostname, baseDomain) === undefined) return;
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (metricsToken === undefined || presented === undefined || !secretsEqual(presented, metricsToken)) throw absent(request);
  });
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
}
