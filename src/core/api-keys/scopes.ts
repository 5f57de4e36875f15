/**
 * The scopes a workspace API key can carry, each granting one family of operations
 * (docs/security.md, "API keys and scopes"). A request outside its key's scopes is refused
 * with `403 insufficient_scope` naming the scope it lacks. `activity:write` only reports when
 * people were last active, and `policies:write` changes a workspace's access policies (which can
 * deactivate many people at once): each apart, so a product reporting sign-ins cannot add users.
 */
export const API_KEY_SCOPES = ['users:read', 'users:write', 'products:read', 'events:read', 'scim', 'activity:write', 'policies:write'] as const;

/** One of {@link API_KEY_SCOPES}. */
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** True when `value` names a scope. */
export function isApiKeyScope(value: string): value is ApiKeyScope {
  return (API_KEY_SCOPES as readonly string[]).includes(value);
}

/**
 * The scopes a key is created with, in the canonical order of {@link API_KEY_SCOPES},
 * without duplicates; every scope when none is asked for (keys made before scopes existed,
 * and the quick start's demo key, do everything).
 */
export function normaliseScopes(requested: readonly string[] | undefined): ApiKeyScope[] {
  if (!requested || requested.length === 0) return [...API_KEY_SCOPES];
  return API_KEY_SCOPES.filter((scope) => requested.includes(scope));
}
