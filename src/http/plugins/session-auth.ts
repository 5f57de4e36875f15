import type { FastifyRequest } from 'fastify';
import type { SessionConfig } from '../../config/load-config.ts';
import type { Tenant } from '../../core/api-keys/authenticate.ts';
import type { Store } from '../../core/ports.ts';
import { authenticateSession } from '../../core/sessions/sessions-service.ts';
import { boundedLru } from '../../core/bounded-lru.ts';
import { requireSameOrigin } from '../session-cookie.ts';

/** Write a session's `last_seen_at` at most this often, not on every request. */
const TOUCH_INTERVAL_MS = 60_000;
const lastTouched = boundedLru<string, number>(100_000);

/**
 * The tenant of a request authenticated by the console's session cookie: the session's key,
 * with a change refused unless it comes from the console's own origin (CSRF). Keeps the
 * session alive by recording its use at most once a minute.
 * @param now - the time (ms since the epoch) the session's expiry and idle time are checked against.
 * @throws AppError `workspace_not_found` (404), `invalid_session` (401), `cross_origin_refused` (403).
 */
export async function sessionTenant(request: FastifyRequest, store: Store, subdomain: string, sessionId: string, lifetime: SessionConfig, now = Date.now()): Promise<Tenant> {
  requireSameOrigin(request);
  const tenant = await authenticateSession(store, subdomain, sessionId, lifetime, now);
  const { idHash, lastSeenAt } = tenant.session;
  keepAlive(request, idHash, lastSeenAt, () => store.sessions.touch(tenant.workspace.id, idHash));
  return tenant;
}

/**
 * Records a session's use (`touch`) unless it was recorded less than a minute ago, here or (by
 * `lastSeenAt`) anywhere: the idle expiry needs minutes, not a write per request. A failed
 * write is logged, never the request's failure.
 */
export function keepAlive(request: FastifyRequest, idHash: string, lastSeenAt: Date, touch: () => Promise<void>): void {
  const now = Date.now();
  if (now - Math.max(lastSeenAt.getTime(), lastTouched.get(idHash) ?? 0) < TOUCH_INTERVAL_MS) return;
  lastTouched.set(idHash, now);
  touch().catch((err) => request.log.warn({ err }, 'could not record session use'));
}
