import type { ApiKeyScope } from '../core/api-keys/scopes.ts';
import { isScimPath } from '../scim/constants.ts';

/**
 * The OpenAPI security requirement of an external-API operation: the `apiKey` scheme with
 * the one scope the operation needs (OpenAPI 3.1 §4.8.30: scopes may be listed for any
 * scheme). The tenant hook enforces the same list, so the document and the check cannot drift.
 */
export function scoped(scope: ApiKeyScope): Array<Record<string, string[]>> {
  return [{ apiKey: [scope] }];
}

const SCIM_SCOPES: readonly string[] = Object.freeze(['scim']);
const NO_SCOPES: readonly string[] = Object.freeze([]);

/** The scopes of each route's schema, worked out on its first request (a route's schema never changes). */
const scopesOfSchema = new WeakMap<object, readonly string[]>();

/**
 * The scopes a route needs, from its path and schema (`request.routeOptions`): `scim` for
 * every SCIM route, else the scopes of the `apiKey` requirement in the schema's `security`
 * (empty when it names none, e.g. the 405 answers of a path's other methods and the 404 of
 * no route).
 */
export function requiredScopes(schema: unknown, path: string): readonly string[] {
  if (isScimPath(path)) return SCIM_SCOPES;
  if (typeof schema !== 'object' || schema === null) return NO_SCOPES;
  let scopes = scopesOfSchema.get(schema);
  if (!scopes) {
    const security = (schema as { security?: Array<Record<string, string[]>> }).security;
    scopes = security?.flatMap((requirement) => requirement.apiKey ?? []) ?? NO_SCOPES;
    scopesOfSchema.set(schema, scopes);
  }
  return scopes;
}
