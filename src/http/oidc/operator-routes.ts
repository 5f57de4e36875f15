import { createHash } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { OperatorSignInConfig, SessionConfig } from '../../config/load-config.ts';
import { AppError } from '../../core/errors.ts';
import { admitOperator, endOperatorSession, openOperatorSession } from '../../core/sessions/operator-sessions.ts';
import { absent, requireOperatorHost } from '../plugins/admin-auth.ts';
import { operatorSessionOf, type OperatorSessions } from '../plugins/operator-session-auth.ts';
import { clearSessionCookie, requireSameOrigin, sessionIdOf } from '../session-cookie.ts';
import type { ProviderSettings, RelyingParty } from './relying-party.ts';
import { CallbackQuery, consoleSchema, OperatorSignInResponses, StartQuery } from '../schemas/console.ts';
import { finishSignIn, startSignIn, verifySignIn } from './sign-in-flow.ts';
import { clearedStateCookie } from './state-cookie.ts';
import { limitSignInStarts, type SignInStartLimits } from '../rate-limit/sign-in-start-limit.ts';

/** What the console's sign-in page offers an operator on this host. */
export const OPERATOR_OPTIONS_PATH = '/console/operator/options';
/** Where the console's "Sign in with <provider>" button for operators leads. */
export const OPERATOR_START_PATH = '/console/operator/oidc/start';
/** The redirect URI registered at the operator identity provider, on the operator host. */
export const OPERATOR_CALLBACK_PATH = '/console/operator/oidc/callback';
/** The operator's console session: who it is (`GET`), sign-out (`DELETE`). */
export const OPERATOR_SESSION_PATH = '/console/operator/session';

/** The name the operators' sign-in starts are counted under in the per-workspace limit (not a DNS label, so no workspace's). */
const OPERATOR_SIGN_IN_SCOPE = '@operator';

/** Where an operator's refused sign-in starts again (no workspace: the log line names none). */
const PLACE = { startPath: OPERATOR_START_PATH } as const;

/** Options of {@link operatorSignInRoutes}. */
export interface OperatorSignInOptions {
  readonly baseDomain: string;
  readonly sessions: SessionConfig;
  /** The operator identity provider; undefined: not configured, and every route answers 404. */
  readonly operatorSignIn: OperatorSignInConfig | undefined;
  /** How operators' sessions are checked (built from `operatorSignIn`). */
  readonly operators: OperatorSessions | undefined;
  /** Discovers the provider, under the outbound policy (what the server may call). */
  readonly relyingParty: RelyingParty;
  /** Limits on starting sign-ins (per address; the operators' sign-in counts as one workspace); absent: none. */
  readonly startLimits?: SignInStartLimits;
}

/**
 * The operators' sign-in to the console with the operator identity provider of the
 * configuration (docs/security.md, "Operators signing in"), on the operator host only: the same
 * code flow as a workspace's (PKCE, `state`, `nonce`, the ID token verified by openid-client),
 * then only a verified email listed in `OPERATOR_EMAILS` gets an operator session, which opens
 * `/admin/v1` for the console. On a workspace's host, or when no operator identity provider is
 * configured, every route answers 404 as a path that does not exist (not the console's page).
 */
export async function operatorSignInRoutes(app: FastifyInstance, options: OperatorSignInOptions): Promise<void> {
  const { baseDomain, sessions, operatorSignIn, operators, relyingParty, startLimits } = options;
  app.addHook('onRequest', async (request) => {
    requireOperatorHost(request, baseDomain);
    if (!operatorSignIn || !operators) throw absent(request);
  });
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const session = [{ consoleSession: [] }];
  const schemas = {
    options: consoleSchema({ summary: 'The operator identity provider of this server', security: [], response: OperatorSignInResponses.options }),
    start: consoleSchema({ summary: 'Start an operator\'s sign-in', security: [], querystring: StartQuery, response: OperatorSignInResponses.start }),
    callback: consoleSchema({ summary: 'Where the operator identity provider sends the browser back', security: [], querystring: CallbackQuery, response: OperatorSignInResponses.callback }),
    read: consoleSchema({ summary: 'The operator\'s console session', security: session, response: OperatorSignInResponses.read }),
    end: consoleSchema({ summary: 'Sign the operator out', security: session, response: OperatorSignInResponses.end }),
  };
  if (!operatorSignIn || !operators) {
    // The onRequest hook answers 404 before any of these runs.
    for (const [path, schema] of [[OPERATOR_OPTIONS_PATH, schemas.options], [OPERATOR_START_PATH, schemas.start], [OPERATOR_CALLBACK_PATH, schemas.callback]] as const) {
      app.get(path, { schema }, async () => undefined);
    }
    app.get(OPERATOR_SESSION_PATH, { schema: schemas.read }, async () => undefined);
    app.delete(OPERATOR_SESSION_PATH, { schema: schemas.end }, async () => undefined);
    return;
  }
  const { store } = operators;
  const { issuer, clientId, clientSecret } = operatorSignIn;
  // The configuration is fixed for the process: its hash names it for the relying party's cache.
  const provider: ProviderSettings = {
    issuer,
    clientId,
    clientSecret: () => clientSecret,
    revision: `operator:${createHash('sha256').update(JSON.stringify([issuer, clientId, clientSecret])).digest('hex')}`,
  };

  api.get(OPERATOR_OPTIONS_PATH, { schema: schemas.options }, async () => ({ identity_provider: { host: new URL(issuer).host } }));

  // After the host check above (a workspace's host gets its 404 without spending a start).
  const limited = startLimits ? { onRequest: limitSignInStarts(startLimits, () => OPERATOR_SIGN_IN_SCOPE) } : {};
  app.get<{ Querystring: StartQuery }>(OPERATOR_START_PATH, { schema: schemas.start, ...limited }, async (request, reply) =>
    startSignIn(
      request,
      reply,
      PLACE,
      provider,
      relyingParty,
      OPERATOR_CALLBACK_PATH,
      (stateHash, pending) => store.operatorSessions.saveSignIn(stateHash, pending),
      'The operator identity provider cannot be reached or is not an OpenID Provider. Try again later, or use the operator token.',
    ),
  );

  // A query the schema refuses is answered with a refusal page (verifySignIn), not JSON: a person is reading.
  app.get<{ Querystring: CallbackQuery }>(OPERATOR_CALLBACK_PATH, { schema: schemas.callback, attachValidation: true }, async (request, reply) => {
    reply.header('set-cookie', clearedStateCookie(request));
    const identity = await verifySignIn(request, reply, PLACE, relyingParty, (stateHash) => store.operatorSessions.takeSignIn(stateHash), async () => provider);
    if (!identity) return reply;
    const { policy } = operators;
    return finishSignIn(request, reply, PLACE, async () => openOperatorSession(store, policy, await admitOperator(store, policy, identity), sessions, request.id), 'operator');
  });

  api.get(OPERATOR_SESSION_PATH, { schema: schemas.read }, async (request, reply) => {
    const sessionId = sessionIdOf(request);
    if (!sessionId) throw new AppError('invalid_session', 'Sign in to the console again: the session ended or never existed.');
    const session = await operatorSessionOf(request, operators, sessionId);
    return reply.header('cache-control', 'no-store').send({ actor: session.actor, expires_at: session.expiresAt.toISOString() });
  });

  api.delete(OPERATOR_SESSION_PATH, { schema: schemas.end }, async (request, reply) => {
    requireSameOrigin(request);
    const sessionId = sessionIdOf(request);
    const session = sessionId ? await operatorSessionOf(request, operators, sessionId).catch(() => undefined) : undefined;
    if (session) await endOperatorSession(store, session, request.id);
    clearSessionCookie(request, reply);
    return reply.code(204).send();
  });
}
