import type { FastifyRequest } from 'fastify';
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

/**
 * The scopes the route of `request` needs: `scim` for every SCIM route, else the scopes of
 * the `apiKey` requirement in its schema's `security` (empty when it names none, e.g. the
 * 405 answers of a path's other methods and the 404 of no route).
 */
export function requiredScopes(request: FastifyRequest, path: string): readonly string[] {
  if (isScimPath(path)) return ['scim'];
  const security = (request.routeOptions.schema as { security?: Array<Record<string, string[]>> } | undefined)?.security;
  return security?.flatMap((requirement) => requirement.apiKey ?? []) ?? [];
}
