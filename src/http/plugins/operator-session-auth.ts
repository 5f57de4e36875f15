import type { FastifyRequest } from 'fastify';
import { authenticateOperatorSession, type OperatorPolicy, type OperatorSession } from '../../core/sessions/operator-sessions.ts';
import type { SessionLifetime } from '../../core/sessions/sessions-service.ts';
import type { Store } from '../../core/ports.ts';
import { requireSameOrigin } from '../session-cookie.ts';
import { keepAlive } from './session-auth.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator's console session that authenticated this admin-API request, if one did (not the admin token). */
    operatorSession?: OperatorSession;
  }
}

/** What checks an operator's console session: the store, who may be operator, and how long sessions live. */
export interface OperatorSessions {
  readonly store: Store;
  readonly policy: OperatorPolicy;
  readonly lifetime: SessionLifetime;
}

/**
 * The operator session a request's cookie carries, with a change refused unless it comes from the
 * console's own origin (CSRF); keeps the session alive by recording its use at most once a minute.
 * @throws AppError `invalid_session` (401), `cross_origin_refused` (403).
 */
export async function operatorSessionOf(request: FastifyRequest, sessions: OperatorSessions, sessionId: string): Promise<OperatorSession> {
  requireSameOrigin(request);
  const { store, policy, lifetime } = sessions;
  const session = await authenticateOperatorSession(store, policy, sessionId, lifetime);
  keepAlive(request, session.idHash, session.lastSeenAt, () => store.operatorSessions.touch(session.idHash));
  return session;
}
