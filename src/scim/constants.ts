/*
 * The fixed names and limits of wum's SCIM 2.0 service provider (RFC 7643, RFC 7644;
 * docs/contract.md Part B, "SCIM 2.0 provisioning").
 */

/** Path prefix of the SCIM service on a workspace's host. */
export const SCIM_PREFIX = '/scim/v2';

/** Where the SCIM service's OpenAPI document is served: public documentation, on any host, without a key. */
export const SCIM_OPENAPI_PATH = `${SCIM_PREFIX}/openapi.json`;

/** Media type of every SCIM response (RFC 7644 §3.1). */
export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

/** Schema URNs (RFC 7643 §8.7, RFC 7644 §3.4.2, §3.5.2, §3.12) and wum's own extension. */
export const URN = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  enterpriseUser: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  wumUser: 'urn:ietf:params:scim:schemas:extension:wum:2.0:User',
  listResponse: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  patchOp: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
} as const;

/** `count` when a list request gives none (docs/contract.md Part B). */
export const DEFAULT_COUNT = 100;
/** The most resources one list response holds; a larger `count` is lowered to it (RFC 7644 §3.4.2.4). */
export const MAX_COUNT = 1000;
/** The most members a group resource lists (a role may have far more holders: list those through `/Users`). */
export const MAX_GROUP_MEMBERS = 1000;
/** Longest accepted `filter`, in characters. */
export const MAX_FILTER_LENGTH = 2048;
/** Deepest nesting of parentheses and value filters (`[…]`) in one filter: deeper ones would only exhaust the stack. */
export const MAX_FILTER_DEPTH = 16;
/** Most comparisons in one filter (each becomes SQL). */
export const MAX_FILTER_COMPARISONS = 50;
/** Most operations in one PATCH request. */
export const MAX_PATCH_OPERATIONS = 100;

/** True for a request path (without query) of the SCIM service. */
export function isScimPath(path: string): boolean {
  return path === SCIM_PREFIX || path.startsWith(`${SCIM_PREFIX}/`);
}

/** The SCIM endpoints in their canonical spelling (RFC 7644 §3.2, §4). */
const ENDPOINTS = ['Users', 'Groups', 'ServiceProviderConfig', 'ResourceTypes', 'Schemas'];

/**
 * A request target with the SCIM endpoint spelled canonically (`/scim/v2/users` →
 * `/scim/v2/Users`) and without a trailing slash after it (`/Users/?filter=…`), as clients
 * such as Microsoft's reference test collection send them; any other target is returned as is.
 */
export function canonicalScimTarget(url: string): string {
  if (!url.startsWith(`${SCIM_PREFIX}/`)) return url;
  const match = /^\/scim\/v2\/([A-Za-z]+)(\/?)(\/[^?]*)?(\?.*)?$/.exec(url);
  if (!match) return url;
  const endpoint = ENDPOINTS.find((e) => e.toLowerCase() === match[1]!.toLowerCase());
  if (!endpoint) return url;
  const rest = match[3] ?? '';
  return `${SCIM_PREFIX}/${endpoint}${rest}${match[4] ?? ''}`;
}
