import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SessionConfig } from '../../../config/load-config.ts';
import type { ActorJson } from '../../../core/actor.ts';
import { AppError } from '../../../core/errors.ts';
import type { Store } from '../../../core/ports.ts';
import { endSession, openKeySession, type SessionTenant } from '../../../core/sessions/sessions-service.ts';
import { tenantOf } from '../../plugins/tenant.ts';
import { consoleSchema, SessionResponses } from '../../schemas/console.ts';
import { clearSessionCookie, requireSameOrigin, setSessionCookie } from '../../session-cookie.ts';

/** Path of the console's session, under the external API's prefix (its tenant check runs first). */
export const SESSION_PATH = '/console/session';

/** The session of a request authenticated by its cookie, else undefined (it came with a key). */
function sessionOf(request: FastifyRequest): SessionTenant | undefined {
  const tenant = tenantOf(request);
  return 'session' in tenant ? (tenant as SessionTenant) : undefined;
}

/**
 * The web console's sign-in on a workspace host (docs/security.md, "Console sessions"):
 * `POST` with the workspace's API key in `X-Api-Key` opens a session and answers with its
 * cookie, so the page never keeps the key; `GET` says who the session is; `DELETE` signs out.
 * The tenant hook has authenticated the key (with its failed-attempt limit) or the cookie
 * before these run. Not part of the API's document: only the console calls them.
 */
export async function sessionRoutes(app: FastifyInstance, options: { store: Store; sessions: SessionConfig }): Promise<void> {
  const { store, sessions } = options;
  const describe = (request: FastifyRequest, expiresAt: Date, actor: ActorJson) => {
    const tenant = tenantOf(request);
    return { workspace: { subdomain: tenant.workspace.subdomain }, actor, scopes: [...tenant.apiKey.scopes], expires_at: expiresAt.toISOString() };
  };

  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const byKey = [{ apiKey: [] }];
  const bySession = [{ consoleSession: [] }];
  const openSchema = consoleSchema({ summary: 'Open a console session with the workspace\'s API key', security: byKey, response: SessionResponses.open });
  api.post(SESSION_PATH, { schema: openSchema }, async (request, reply) => {
    // A sign-in forged by another site would sign the victim in as the attacker's workspace.
    requireSameOrigin(request);
    if (sessions.keySignIn === 'never') {
      throw new AppError('key_sign_in_disabled', 'This server does not let an API key open a console session.');
    }
    const current = sessionOf(request);
    if (current) return describe(request, current.session.expiresAt, current.session.actor);
    // A workspace whose people sign in as themselves no longer hands the console to a shared key.
    if (sessions.keySignIn === 'auto' && (await store.identityProviders.find(tenantOf(request).workspace.id))) {
      throw new AppError('key_sign_in_disabled', 'This workspace signs in to the console with its identity provider, not an API key.');
    }
    const opened = await openKeySession(store, tenantOf(request), sessions, request.id);
    setSessionCookie(request, reply, opened.id, opened.expiresAt);
    return reply.code(201).send(describe(request, opened.expiresAt, opened.actor));
  });

  api.get(SESSION_PATH, { schema: consoleSchema({ summary: 'The console session of this cookie', security: bySession, response: SessionResponses.read }) }, async (request) => {
    const current = sessionOf(request);
    if (!current) throw new AppError('invalid_session', 'Sign in to the console again: the session ended or never existed.');
    return describe(request, current.session.expiresAt, current.session.actor);
  });

  api.delete(SESSION_PATH, { schema: consoleSchema({ summary: 'Sign out', security: bySession, response: SessionResponses.end }) }, async (request, reply) => {
    const current = sessionOf(request);
    if (current) await endSession(store, current, request.id);
    clearSessionCookie(request, reply);
    return reply.code(204).send();
  });
}
