import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { TestWorkspace } from './test-context.ts';

/** The SCIM schemas tests send: a User, the wum extension (`workspaceRole`), a PATCH request. */
export const SCIM_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const SCIM_WUM = 'urn:ietf:params:scim:schemas:extension:wum:2.0:User';
export const SCIM_PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/**
 * A SCIM request under `/scim/v2` of `key`'s workspace, with its key as the bearer token and a
 * JSON body as `application/scim+json` (RFC 7644 §3.1); `headers` are added, or replace those.
 */
export function scimRequest(
  app: FastifyInstance,
  key: TestWorkspace,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: method as 'POST',
    url: `/scim/v2${path}`,
    headers: { host: key.host, authorization: `Bearer ${key.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }), ...headers },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}
