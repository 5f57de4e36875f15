import type { FastifyInstance, FastifyRequest } from 'fastify';
import { secretsEqual } from '../../core/api-keys/api-key-secret.ts';
import { AppError } from '../../core/errors.ts';
import { countFailedAttempt } from '../rate-limit/failed-attempts.ts';
import type { TokenBuckets } from '../../rate-limits/token-buckets.ts';
import { sessionIdOf } from '../session-cookie.ts';
import { operatorSessionOf, type OperatorSessions } from './operator-session-auth.ts';
import { subdomainOf } from './tenant.ts';

/** Where and how the operator interface is guarded. */
export interface OperatorGuard {
  /** The operator token (`ADMIN_TOKEN`); undefined: no token opens the API (only operators' sessions). */
  readonly adminToken: string | undefined;
  /** Operators' console sessions (`OPERATOR_OIDC_ISSUER` set); absent: only the token opens the API. */
  readonly operatorSessions?: OperatorSessions | undefined;
  /** `BASE_DOMAIN`: hosts `<label>.<BASE_DOMAIN>` are workspaces', where the operator interface does not exist. */
  readonly baseDomain: string;
  /** The limit of failed attempts shared with API keys (`AUTH_FAILURE_LIMIT`); absent: none. */
  readonly authFailures?: TokenBuckets | undefined;
}

/**
 * Refuses a request to an operator route on a workspace's host with the same answer as for a
 * path that exists nowhere (errors.ts, the not-found handler): a workspace's users never reach
 * the operator interface, and cannot learn it is there.
 * @throws AppError `not_found` (404) on a workspace host.
 */
export function requireOperatorHost(request: FastifyRequest, baseDomain: string): void {
  if (subdomainOf(request.hostname, baseDomain) !== undefined) throw absent(request);
}

/** The error of a path that exists nowhere (the not-found handler's answer, errors.ts). */
export function absent(request: FastifyRequest): AppError {
  return new AppError('not_found', `No resource at ${request.method} ${request.url.split('?')[0]}.`);
}

/**
 * Guards every route of the instance it is added to: on a workspace's host the routes do not
 * exist ({@link requireOperatorHost}); elsewhere `Authorization: Bearer <ADMIN_TOKEN>` is
 * required, compared in constant time, and each wrong token counts toward the failed-attempt
 * limit (per address and per token; the right token is never refused by it) — or, without an `Authorization` header, the console session of an
 * operator who signed in with the operator identity provider (its cookie; a change only from
 * the console's own origin), whose actor the request then acts as (`request.operatorSession`).
 * A workspace's session is never one: operators' sessions are another table.
 * Source: docs/contract.md Part B, Operator interface; docs/security.md.
 * @throws AppError `not_found` (404) on a workspace host; `rate_limited` (429) with
 *   `Retry-After` past the limit; `invalid_admin_token` (401) with `WWW-Authenticate: Bearer`
 *   (RFC 6750 §3); with a session cookie `invalid_session` (401) or `cross_origin_refused` (403).
 */
export function requireOperator(app: FastifyInstance, guard: OperatorGuard): void {
  const { adminToken, baseDomain, authFailures, operatorSessions } = guard;
  // Declared up front so every request object has the same shape (Fastify, "Decorators").
  app.decorateRequest('operatorSession', undefined);
  app.addHook('onRequest', async (request, reply) => {
    requireOperatorHost(request, baseDomain);
    const header = request.headers.authorization ?? '';
    const sessionId = operatorSessions && !header ? sessionIdOf(request) : undefined;
    if (sessionId) {
      request.operatorSession = await operatorSessionOf(request, operatorSessions!, sessionId);
      return;
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1] || adminToken === undefined || !secretsEqual(match[1], adminToken)) {
      const limited = authFailures ? await countFailedAttempt(authFailures, reply, request.ip, 'admin', match?.[1] ?? header) : undefined;
      if (limited) throw limited;
      throw new AppError('invalid_admin_token', 'Send the operator token as Authorization: Bearer <token>.', undefined, {
        'www-authenticate': 'Bearer realm="wum-admin"',
      });
    }
  });
}
