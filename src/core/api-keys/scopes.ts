import { AppError } from '../errors.ts';

/**
 * The scopes a workspace API key can carry, each granting one family of operations
 * (docs/security.md, "API keys and scopes"). A request outside its key's scopes is refused
 * with `403 insufficient_scope` naming the scope it lacks. `owners:write` is asked for by no
 * route of its own: the user change that creates, promotes, reactivates or renames an owner
 * needs it beside the route's scope. `activity:write` only reports when people were last
 * active, and `policies:write` changes a workspace's access policies (which can deactivate many
 * people at once): each apart, so a product reporting sign-ins cannot add users. The owner's
 * self-service scopes each open one of the workspace's own settings: `keys:write` its API keys,
 * `sso:write` its identity provider, `webhooks:write` its webhook endpoints, `audit:read` its
 * audit trail, `audit:write` its audit streams (docs/security.md, "Self-service").
 */
export const API_KEY_SCOPES = [
  'users:read',
  'users:write',
  'products:read',
  'events:read',
  'scim',
  'owners:write',
  'activity:write',
  'policies:write',
  'keys:write',
  'sso:write',
  'webhooks:write',
  'audit:read',
  'audit:write',
] as const;

/** One of {@link API_KEY_SCOPES}. */
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/**
 * The stored scope of a key that holds every scope, present and future (docs/security.md,
 * "API keys and scopes"): a scope added later is held at once, and a key listing scopes by
 * name never gains one.
 */
export const EVERY_SCOPE = '*';

/** What a key's `scopes` may hold: named scopes, or {@link EVERY_SCOPE} alone. */
export type StoredScope = ApiKeyScope | typeof EVERY_SCOPE;

/** True when `value` names a scope. */
export function isApiKeyScope(value: string): value is ApiKeyScope {
  return (API_KEY_SCOPES as readonly string[]).includes(value);
}

/** True when a key of `scopes` holds `scope`: it names it, or holds {@link EVERY_SCOPE}. */
export function hasScope(scopes: readonly string[], scope: string): boolean {
  return scopes.includes(scope) || scopes.includes(EVERY_SCOPE);
}

/**
 * The scopes a key is created with: `['*']` ({@link EVERY_SCOPE}) when none is asked for (the
 * quick start's demo key, a workspace's first key), when `*` is asked for, or when every scope
 * there is is asked for; else the named scopes in the canonical order of
 * {@link API_KEY_SCOPES}, without duplicates.
 */
export function normaliseScopes(requested: readonly string[] | undefined): StoredScope[] {
  if (!requested || requested.length === 0 || requested.includes(EVERY_SCOPE)) return [EVERY_SCOPE];
  const named = API_KEY_SCOPES.filter((scope) => requested.includes(scope));
  return named.length === API_KEY_SCOPES.length ? [EVERY_SCOPE] : named;
}

/**
 * Refuses a change by an actor acting with `scopes` (a key's, or a person's session's) that
 * lack `scope`; `undefined` scopes (the operator, the server) are not limited by scopes.
 * Source: docs/security.md, "API keys and scopes".
 * @throws AppError `insufficient_scope` (403), naming the scope.
 */
export function requireScopeOf(scopes: readonly string[] | undefined, scope: string): void {
  if (scopes && !hasScope(scopes, scope)) {
    throw new AppError('insufficient_scope', `This API key lacks the scope ${scope}.`);
  }
}

/**
 * Refuses to hand out scopes the actor does not hold (docs/security.md, "Self-service": a key is
 * never given a scope its creator lacks, nor revoked by a credential holding less than it).
 * `scopes` are a key's as stored (`['*']` is every scope); `undefined` actor scopes (the
 * operator, the server) are not limited.
 * @throws AppError `insufficient_scope` (403), naming each scope the actor lacks.
 */
export function requireScopesOf(held: readonly string[] | undefined, scopes: readonly string[]): void {
  if (!held) return;
  const wanted: readonly string[] = scopes.includes(EVERY_SCOPE) ? API_KEY_SCOPES : scopes;
  const missing = wanted.filter((scope) => !hasScope(held, scope));
  if (missing.length > 0) {
    throw new AppError(
      'insufficient_scope',
      `This credential lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')}: a key can hold only scopes its creator holds.`,
    );
  }
}
