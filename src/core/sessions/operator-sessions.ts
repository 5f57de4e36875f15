import type { Actor, ActorJson } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Store } from '../ports.ts';
import { canonicalEmail } from '../users/email.ts';
import { verifiedEmail, type VerifiedIdentity } from './person-sign-in.ts';
import { SignInRefusedError } from './sign-in-refused.ts';
import { hashSessionId, newSessionId, type OpenedSession, type SessionLifetime } from './sessions-service.ts';

/** Who may sign in as operator: the configured provider's issuer and the listed emails (canonical: `canonicalEmail`). */
export interface OperatorPolicy {
  readonly issuer: string;
  readonly emails: ReadonlySet<string>;
}

/** An operator's session found for a request: who acts, and what keeping it alive needs. */
export interface OperatorSession {
  readonly idHash: string;
  readonly actor: ActorJson;
  readonly lastSeenAt: Date;
  readonly expiresAt: Date;
}

/** True when `email` is listed; an email that is not ASCII never is (docs/security.md, "One spelling of an email"). */
const isListed = (policy: OperatorPolicy, email: string) => policy.emails.has(canonicalEmail(email) ?? '');

/**
 * Who may enter the console as operator through the operator identity provider
 * (docs/security.md, "Operators signing in"): a verified email listed in `OPERATOR_EMAILS`, and,
 * after that email's first sign-in, only with the provider account (`sub`) it used then.
 * Returns the operator's actor: id `oidc:<sub>` (stable at that provider), label the email.
 * @throws SignInRefusedError (`sign_in_refused`, 403) saying why: the reasons of `verifiedEmail`,
 *   `not_operator`, `another_account`.
 */
export async function admitOperator(store: Store, policy: OperatorPolicy, identity: VerifiedIdentity): Promise<ActorJson> {
  const email = verifiedEmail(identity);
  if (!isListed(policy, email)) throw new SignInRefusedError('not_operator', `${email} is not one of this server's operators.`);
  const bound = await store.operatorSessions.bindSubject(policy.issuer, canonicalEmail(email)!, identity.sub);
  if (bound !== identity.sub) throw new SignInRefusedError('another_account', `${email} signed in before as another account of the identity provider.`);
  return { type: 'operator', id: `oidc:${identity.sub}`, label: email };
}

/**
 * Opens an operator's console session after a sign-in with the operator identity provider,
 * recorded in the audit trail (no workspace). Only the SHA-256 of its id is stored. Past
 * `lifetime.maxPerPrincipal` live sessions of the same email, the oldest end.
 */
export async function openOperatorSession(
  store: Store,
  policy: OperatorPolicy,
  actor: ActorJson,
  lifetime: SessionLifetime,
  requestId: string | null = null,
): Promise<OpenedSession> {
  const { id, idHash, expiresAt } = newSessionId(lifetime);
  await store.transaction(async (tx) => {
    await tx.operatorSessions.insert({ idHash, email: actor.label ?? '', issuer: policy.issuer, actor, expiresAt });
    if (lifetime.maxPerPrincipal) await tx.operatorSessions.endOldest(actor.label ?? '', lifetime.maxPerPrincipal);
    await tx.audit.append(operatorSignInEvent(actor, 'console.signed_in', requestId, { expires_at: expiresAt.toISOString(), method: 'oidc' }));
  });
  return { id, expiresAt, actor };
}

/**
 * The operator session of a cookie: read from the database on every request (never cached), and
 * its email checked against the list of this process, so sign-out anywhere, a restart with the
 * email removed from `OPERATOR_EMAILS` or another operator provider ends it at the next request.
 * @throws AppError `invalid_session` (401: unknown, ended, idle too long, past its absolute end, no longer listed).
 */
export async function authenticateOperatorSession(
  store: Store,
  policy: OperatorPolicy,
  sessionId: string,
  lifetime: SessionLifetime,
  now = Date.now(),
): Promise<OperatorSession> {
  const idHash = hashSessionId(sessionId);
  const session = await store.operatorSessions.find(idHash);
  if (
    !session ||
    session.endedAt ||
    session.issuer !== policy.issuer ||
    !isListed(policy, session.email) ||
    session.expiresAt.getTime() <= now ||
    session.lastSeenAt.getTime() + lifetime.idleMs <= now
  ) {
    throw new AppError('invalid_session', 'Sign in to the console again: the session ended or never existed.');
  }
  return { idHash, actor: session.actor, lastSeenAt: session.lastSeenAt, expiresAt: session.expiresAt };
}

/** Ends an operator's session (sign-out), recorded in the audit trail; ending an ended one changes nothing. */
export async function endOperatorSession(store: Store, session: OperatorSession, requestId: string | null = null): Promise<void> {
  await store.transaction(async (tx) => {
    await tx.operatorSessions.end(session.idHash);
    await tx.audit.append(operatorSignInEvent(session.actor, 'console.signed_out', requestId, null));
  });
}

/** The audit event of an operator's sign-in or sign-out: about the operator, in no workspace. */
function operatorSignInEvent(actor: ActorJson, action: string, requestId: string | null, after: unknown) {
  const full: Actor = { ...actor, requestId };
  return { workspaceId: null, actor: full, action, targetType: 'operator', targetId: actor.id ?? '', before: null, after };
}
