import type { FastifyInstance } from 'fastify';
import { secretsEqual } from '../../core/api-keys/api-key-secret.ts';
import { AppError } from '../../core/errors.ts';
import { setRateLimitFields } from '../rate-limit/rate-limit-fields.ts';
import type { TokenBuckets } from '../rate-limit/token-buckets.ts';
import { subdomainOf } from './tenant.ts';

/** Where and how the operator interface is guarded. */
export interface AdminGuard {
  /** The operator token (`ADMIN_TOKEN`). */
  readonly adminToken: string;
  /** `BASE_DOMAIN`: hosts `<label>.<BASE_DOMAIN>` are workspaces', where the operator interface does not exist. */
  readonly baseDomain: string;
  /** The per-address limit of failed attempts shared with API keys (`AUTH_FAILURE_LIMIT`); absent: none. */
  readonly authFailures?: TokenBuckets | undefined;
}

/**
 * Guards every route of the instance it is added to: on a workspace's host the routes do not
 * exist (`404 not_found`: a workspace's users never reach the operator interface, and cannot
 * learn it is there); elsewhere `Authorization: Bearer <ADMIN_TOKEN>` is required, compared in
 * constant time, and each wrong token counts toward the per-address failed-attempt limit.
 * Source: docs/contract.md Part B, Operator interface; docs/security.md.
 * @throws AppError `not_found` (404) on a workspace host; `rate_limited` (429) with
 *   `Retry-After` past the limit; `invalid_admin_token` (401) with `WWW-Authenticate: Bearer`
 *   (RFC 6750 §3).
 */
export function requireAdminToken(app: FastifyInstance, guard: AdminGuard): void {
  const { adminToken, baseDomain, authFailures } = guard;
  app.addHook('onRequest', async (request, reply) => {
    if (subdomainOf(request.hostname, baseDomain) !== undefined) {
      // The same answer as for a path that exists nowhere (errors.ts, the not-found handler).
      throw new AppError('not_found', `No resource at ${request.method} ${request.url.split('?')[0]}.`);
    }
    const failures = await authFailures?.peek(request.ip);
    if (failures && !failures.allowed) {
      setRateLimitFields(reply, 'auth-failures', authFailures!, failures);
      throw new AppError('rate_limited', 'Too many failed attempts from this address.', undefined, {
        'retry-after': String(failures.retryAfterSeconds),
      });
    }
    const header = request.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1] || !secretsEqual(match[1], adminToken)) {
      if (authFailures) setRateLimitFields(reply, 'auth-failures', authFailures, await authFailures.take(request.ip));
      throw new AppError('invalid_admin_token', 'Send the operator token as Authorization: Bearer <token>.', undefined, {
        'www-authenticate': 'Bearer realm="wum-admin"',
      });
    }
  });
}
