import type { operations } from './schema.ts';

/** A scope an API key can carry (the OpenAPI document's key `scopes` items). */
export type ApiKeyScope = NonNullable<operations['createApiKey']['requestBody']>['content']['application/json']['scopes'] extends
  | readonly (infer S)[]
  | undefined
  ? S
  : never;

/** The scope of a key that holds every scope, present and future (how such a key is stored and shown). */
export const EVERY_SCOPE = '*' satisfies ApiKeyScope;

/**
 * Every named scope, in the service's order (docs/security.md, "API keys and scopes"): what a
 * key form offers ({@link EVERY_SCOPE} aside: a key given all of them is stored as it). The
 * compiler holds it to the generated type both ways (none missing, none extra), so a new scope
 * in the API fails the build until it is listed here.
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
] as const satisfies readonly ApiKeyScope[];

/** A named scope (not {@link EVERY_SCOPE}). */
export type NamedApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** Fails to compile when the API has a scope {@link API_KEY_SCOPES} lacks. */
type Unlisted = Exclude<ApiKeyScope, NamedApiKeyScope | typeof EVERY_SCOPE>;
const everyScopeListed: [Unlisted] extends [never] ? true : never = true;
void everyScopeListed;
