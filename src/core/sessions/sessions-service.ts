import { randomBytes } from 'node:crypto';
import { apiKeyLabel, type ActorJson } from '../actor.ts';
import { hashApiKey } from '../api-keys/api-key-secret.ts';
import { EVERY_SCOPE } from '../api-keys/scopes.ts';
import type { Tenant } from '../api-keys/authenticate.ts';
import { AppError } from '../errors.ts';
import type { Store } from '../ports.ts';
import type { AuditEntry } from '../audit/audit-repository.ts';

/** How long sessions live (docs/security.md, "Console sessions"). */
export interface SessionLifetime {
  /** Unused this long, in ms, a session ends. */
  readonly idleMs: number;
  /** This long after sign-in, in ms, a session ends whatever its use. */
  readonly maxMs: number;
  /**
   * Live sessions kept per key, per person and per operator: opening one more ends the oldest
   * (`SESSIONS_PER_PRINCIPAL_MAX`); 0 or absent: no cap (docs/security.md, "Hardening controls").
   */
  readonly maxPerPrincipal?: number;
}

/** A session just opened: its id (the cookie's value, never stored) and when it ends at the latest. */
export interface OpenedSession {
  readonly id: string;
  readonly expiresAt: Date;
  readonly actor: ActorJson;
}

/** A request's session: the tenant it acts as, and what the session needs to be kept alive. */
export interface SessionTenant extends Tenant {
  readonly session: { readonly idHash: string; readonly lastSeenAt: Date; readonly expiresAt: Date; readonly actor: ActorJson };
}

/** Session ids are hashed like API keys: 256 random bits need no slow hash. */
export const hashSessionId = hashApiKey;

/**
 * A new session's id (256 random bits, base64url: the cookie's value, never stored), the hash
 * that is stored, and when it ends at the latest (`lifetime.maxMs` from now). Every kind of
 * console session (key, person, operator) starts here.
 */
export function newSessionId(lifetime: SessionLifetime): { readonly id: string; readonly idHash: string; readonly expiresAt: Date } {
  const id = randomBytes(32).toString('base64url');
  return { id, idHash: hashSessionId(id), expiresAt: new Date(Date.now() + lifetime.maxMs) };
}

/**
 * Exchanges the workspace API key that authenticated `tenant` for a console session acting
 * with that key: the page's script then holds only an HttpOnly cookie, never the key. The
 * session ends with the key (revoked or expired), after `idleMs` unused, `maxMs` after
 * sign-in, or at sign-out; past `maxPerPrincipal` live sessions of the key, the oldest end.
 */
export async function openKeySession(store: Store, tenant: Tenant, lifetime: SessionLifetime, requestId: string | null = null): Promise<OpenedSession> {
  const { id, idHash, expiresAt } = newSessionId(lifetime);
  const actor: ActorJson = { type: 'api_key', id: tenant.apiKey.id, label: apiKeyLabel(tenant.apiKey.name, tenant.apiKey.prefix) };
  await store.transaction(async (tx) => {
    await tx.sessions.insert(tenant.workspace.id, { idHash, apiKeyId: tenant.apiKey.id, actor, expiresAt });
    if (lifetime.maxPerPrincipal) await tx.sessions.endOldest(tenant.workspace.id, { apiKeyId: tenant.apiKey.id }, lifetime.maxPerPrincipal);
    await tx.audit.append(signInEvent(tenant, actor, 'console.signed_in', requestId, { expires_at: expiresAt.toISOString() }));
  });
  return { id, expiresAt, actor };
}

/**
 * The tenant of a session cookie: read from the database on every request (sessions are
 * never cached), so a session ended anywhere — sign-out, its key revoked, a replica's change —
 * is refused everywhere at once.
 * @throws AppError `workspace_not_found` (404), `invalid_session` (401: unknown, ended, idle too
 *   long, past its absolute end, or its key revoked or expired).
 */
export async function authenticateSession(store: Store, subdomain: string, sessionId: string, lifetime: SessionLifetime, now = Date.now()): Promise<SessionTenant> {
  const idHash = hashSessionId(sessionId);
  const { workspace, session } = await store.sessions.resolve(subdomain, idHash);
  if (!workspace) throw new AppError('workspace_not_found', `No workspace "${subdomain}".`);
  const key = session?.person ? personKey(session.person, session.actor) : session?.apiKey;
  if (
    !session ||
    !key ||
    (session.person && !(session.person.stillOwner && session.person.sameIdentityProvider)) ||
    session.endedAt ||
    session.expiresAt.getTime() <= now ||
    session.lastSeenAt.getTime() + lifetime.idleMs <= now ||
    (key.expiresAt && key.expiresAt.getTime() <= now)
  ) {
    throw new AppError('invalid_session', 'Sign in to the console again: the session ended or never existed.');
  }
  return {
    workspace,
    apiKey: key,
    apiKeyId: key.id,
    session: { idHash, lastSeenAt: session.lastSeenAt, expiresAt: session.expiresAt, actor: session.actor },
  };
}

/** What the workspace grants its owners: every scope, present and future (docs/security.md, "API keys and scopes"). */
const OWNER_SCOPES: readonly string[] = Object.freeze([EVERY_SCOPE]);

/**
 * What a person's session may do, in the shape of a key: what the workspace grants owners
 * (every scope: an owner administers the workspace), under the person's id and email.
 */
function personKey(person: { userId: string }, actor: ActorJson) {
  return { id: person.userId, name: actor.label ?? '', prefix: '', scopes: OWNER_SCOPES, expiresAt: null };
}

/** A person who signed in with the workspace's identity provider: an active owner of it. */
export interface SignedInPerson {
  /** `users.id`. */
  readonly userId: number;
  readonly publicId: string;
  readonly email: string;
}

/**
 * Opens a person's console session after a sign-in with the workspace's identity provider
 * (revision `idpRevision`): actor `person`, id the user's id, label the email. It ends when
 * the person is no longer an active owner or the provider's configuration changes; past
 * `maxPerPrincipal` live sessions of the person, the oldest end.
 */
export async function openPersonSession(
  store: Store,
  workspace: Tenant['workspace'],
  person: SignedInPerson,
  idpRevision: string,
  lifetime: SessionLifetime,
  requestId: string | null = null,
): Promise<OpenedSession> {
  const { id, idHash, expiresAt } = newSessionId(lifetime);
  const actor: ActorJson = { type: 'person', id: person.publicId, label: person.email };
  await store.transaction(async (tx) => {
    await tx.sessions.insert(workspace.id, { idHash, userId: person.userId, idpRevision, actor, expiresAt });
    if (lifetime.maxPerPrincipal) await tx.sessions.endOldest(workspace.id, { userId: person.userId }, lifetime.maxPerPrincipal);
    await tx.audit.append({
      workspaceId: workspace.id,
      actor: { ...actor, requestId },
      action: 'console.signed_in',
      targetType: 'user',
      targetId: person.publicId,
      before: null,
      after: { expires_at: expiresAt.toISOString(), method: 'oidc' },
    });
  });
  return { id, expiresAt, actor };
}

/** Ends a session (sign-out), recorded in the audit trail; ending an ended one changes nothing. */
export async function endSession(store: Store, tenant: SessionTenant, requestId: string | null = null): Promise<void> {
  await store.transaction(async (tx) => {
    await tx.sessions.end(tenant.workspace.id, tenant.session.idHash);
    await tx.audit.append(signInEvent(tenant, tenant.session.actor, 'console.signed_out', requestId, null));
  });
}

/** The audit event of a console sign-in or sign-out: about the key the session acts with (never the session's id). */
function signInEvent(tenant: Tenant, actor: ActorJson, action: string, requestId: string | null, after: unknown): AuditEntry {
  return {
    workspaceId: tenant.workspace.id,
    actor: { ...actor, requestId },
    action,
    targetType: actor.type === 'person' ? 'user' : 'api_key',
    targetId: tenant.apiKey.id,
    before: null,
    after,
  };
}
