import { AppError, ERROR_CATALOGUE, type ErrorCode } from '../core/errors.ts';
import type { Group } from '../core/groups/group.ts';
import type { User } from '../core/users/user.ts';
import { SCIM_PREFIX, URN } from './constants.ts';
import { resourceTypes, schemas, serviceProviderConfig } from './discovery.ts';
import { toScimError, type ScimErrorBody } from './errors.ts';
import { toGroupResource } from './group-resource.ts';
import { listResponse } from './list.ts';
import { toUserResource } from './user-resource.ts';

/*
 * The examples of the SCIM OpenAPI document, rendered by the functions that render the
 * service's answers (a made-up user and group), so an example shows what the service sends.
 */

/** The SCIM base of the examples: the `demo` workspace of the document's server. */
const BASE = `https://demo.example.com${SCIM_PREFIX}`;
const CREATED = new Date('2026-01-15T09:30:00.000Z');
const MODIFIED = new Date('2026-02-01T14:05:00.000Z');

const USER: User = {
  id: '2819c223-7f76-453a-919d-413861904646',
  email: 'ada@example.com',
  role: 'non_owner',
  firstName: 'Ada',
  lastName: 'Lovelace',
  apps: [{ name: 'crm', role: 'admin' }],
  status: 'active',
  externalId: 'okta-00u1ab2c3d',
  scimAttributes: { displayName: 'Ada Lovelace' },
  scimDeleted: false,
  expiresAt: null,
  createdAt: CREATED,
  updatedAt: MODIFIED,
  version: 3,
  lastActiveAt: null,
};

const GROUP: Group = {
  id: 'e9e30dba-f08f-4109-8486-d5c6a331660a',
  product: 'crm',
  role: 'admin',
  externalId: 'okta-00g1ab2c3d',
  createdAt: CREATED,
  updatedAt: MODIFIED,
};

/** A User resource as the service answers it. */
export const userExample = toUserResource(USER, BASE);
/** A Group resource as the service answers it, with its members. */
export const groupExample = toGroupResource(GROUP, [USER], BASE);

/** The answer of `GET /Users`. */
export const userListExample = listResponse([userExample], 1, 1);
/** The answer of `GET /Groups`. */
export const groupListExample = listResponse([groupExample], 1, 1);

/** The answer of `GET /ServiceProviderConfig`. */
export const serviceProviderConfigExample = serviceProviderConfig(BASE);
const resourceTypeExamples = resourceTypes(BASE);
// As sent: the schema documents hold SCIMMY's attribute objects, which become JSON when sent.
const schemaExamples = JSON.parse(JSON.stringify(schemas(BASE))) as Array<Record<string, unknown>>;
/** The answer of `GET /ResourceTypes/User`. */
export const resourceTypeExample = resourceTypeExamples[0]!;
/** The answer of `GET /ResourceTypes`. */
export const resourceTypeListExample = listResponse(resourceTypeExamples, resourceTypeExamples.length, 1);
/** The answer of `GET /Schemas/{id}` for wum's extension. */
export const schemaExample = schemaExamples.find((s) => s.id === URN.wumUser)!;
/** The answer of `GET /Schemas`. */
export const schemaListExample = listResponse(schemaExamples, schemaExamples.length, 1);

/** A POST /Users body as identity providers send it. */
export const userRequestExample = {
  schemas: [URN.user, URN.wumUser],
  userName: 'ada@example.com',
  externalId: 'okta-00u1ab2c3d',
  name: { givenName: 'Ada', familyName: 'Lovelace' },
  emails: [{ value: 'ada@example.com', type: 'work', primary: true }],
  active: true,
  roles: [{ value: 'crm:admin' }],
  [URN.wumUser]: { workspaceRole: 'non_owner' },
};

/** A POST /Groups body. */
export const groupRequestExample = {
  schemas: [URN.group],
  displayName: 'crm:admin',
  externalId: 'okta-00g1ab2c3d',
  members: [{ value: USER.id }],
};

/** A PATCH /Users body (RFC 7644 §3.5.2): the user deactivated, as Okta and Entra ID send it. */
export const userPatchExample = { schemas: [URN.patchOp], Operations: [{ op: 'replace', path: 'active', value: false }] };
/** A PATCH /Groups body (RFC 7644 §3.5.2): a member added. */
export const groupPatchExample = { schemas: [URN.patchOp], Operations: [{ op: 'add', path: 'members', value: [{ value: USER.id }] }] };

/** What each error example says, as the service words it; other codes say their title. */
const DETAILS: Partial<Record<ErrorCode, string>> = {
  invalid_filter: 'The filter is empty.',
  invalid_value: 'userName is required.',
  invalid_syntax: 'The body must be a PatchOp message (RFC 7644 §3.5.2).',
  invalid_path: '"emails[type eq" is not an attribute path (RFC 7644 §3.5.2).',
  no_target: 'Operations[0]: remove needs a path.',
  mutability: 'A group is the product role crm:admin: its displayName cannot change.',
  malformed_json: "The body is not valid JSON: Expected property name or '}' in JSON at position 1",
  bad_request: 'The URL path is not validly percent-encoded.',
  invalid_parameter: 'If-Match must be * or a list of entity tags such as "3".',
  validation_failed: 'The request body is invalid. (userName: must not contain NUL characters)',
  unknown_product: 'One or more products do not exist.',
  unknown_product_role: 'One or more roles do not exist in their product.',
  invalid_api_key: 'The API key is not valid for this workspace.',
  insufficient_scope: 'This API key lacks the scope scim.',
  workspace_not_found: 'No workspace "acme".',
  group_not_found: `No group with id ${GROUP.id} in this workspace.`,
  not_found: 'No schema "urn:example:nothing".',
  user_already_exists: 'An active user with email ada@example.com already exists.',
  group_exists: 'This product role is linked as a group already.',
  last_owner: 'olivia@example.com is the last active owner of this workspace.',
  precondition_failed: 'The user has changed since the ETag sent in If-Match; fetch it again and retry.',
  payload_too_large: 'The request body is larger than 64 KiB.',
  unsupported_media_type: 'Send the body as application/scim+json or application/json.',
  rate_limited: 'Too many requests for this API key; retry after the time in Retry-After.',
  internal_error: 'An unexpected error occurred; the request id identifies it in our logs.',
  service_unavailable: 'The database is busy; retry shortly.',
};

/** The SCIM error the service sends for `code`, with its status. */
export function errorExample(code: ErrorCode): { status: number; body: ScimErrorBody } {
  return toScimError(new AppError(code, DETAILS[code] ?? `${ERROR_CATALOGUE[code].title}.`));
}
