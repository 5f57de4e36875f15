import type { operations } from './schema.ts';

/** A scope an API key can carry (the OpenAPI document's key `scopes` items). */
export type ApiKeyScope = NonNullable<operations['createApiKey']['requestBody']>['content']['application/json']['scopes'] extends
  | readonly (infer S)[]
  | undefined
  ? S
  : never;

/**
 * Every scope, in the service's order (docs/security.md, "API keys and scopes"): what a key
 * form offers. The compiler holds it to the generated type both ways (none missing, none
 * extra), so a new scope in the API fails the build until it is listed here.
 */
export const API_KEY_SCOPES = ['users:read', 'users:write', 'products:read', 'events:read', 'scim', 'activity:write', 'policies:write'] as const satisfies readonly ApiKeyScope[];

/** Fails to compile when the API has a scope {@link API_KEY_SCOPES} lacks. */
type Unlisted = Exclude<ApiKeyScope, (typeof API_KEY_SCOPES)[number]>;
const everyScopeListed: [Unlisted] extends [never] ? true : never = true;
void everyScopeListed;
