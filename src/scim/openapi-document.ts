import SCIMMY from 'scimmy';
import { WORKSPACE_REQUEST_ERRORS, type ErrorCode } from '../core/errors.ts';
import { resourceJsonSchema, type JsonSchema } from './attribute-json-schema.ts';
import { DEFAULT_COUNT, MAX_COUNT, MAX_FILTER_LENGTH, MAX_GROUP_MEMBERS, MAX_PATCH_OPERATIONS, SCIM_PREFIX, URN } from './constants.ts';
import * as examples from './openapi-examples.ts';
import { groupDefinition, userDefinition } from './schema-definitions.ts';

/*
 * The OpenAPI 3.1 document of wum's SCIM 2.0 service (`GET /scim/v2/openapi.json`): its own
 * document, since SCIM has its own media type, errors, authentication and paths relative to
 * its base (RFC 7644 §3). The resource schemas are generated from the SCIM schemas the service
 * validates with; the statuses are those the routes and the shared hooks answer.
 */

/** The media type of every SCIM body (RFC 7644 §3.1). */
const SCIM_JSON = 'application/scim+json';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** The `schemas` attribute of a message: exactly its URN. */
const messageUrn = (urn: string) => ({ type: 'array', items: { const: urn }, minItems: 1, maxItems: 1, examples: [[urn]] });

/** A ListResponse (RFC 7644 §3.4.2) of `item` resources. */
function listSchema(item: string): JsonSchema {
  return {
    type: 'object',
    description: `A ListResponse message (RFC 7644 §3.4.2) of ${item} resources.`,
    required: ['schemas', 'totalResults', 'startIndex', 'itemsPerPage', 'Resources'],
    properties: {
      schemas: messageUrn(URN.listResponse),
      totalResults: { type: 'integer', minimum: 0, description: 'How many resources match, over all pages.' },
      startIndex: { type: 'integer', minimum: 1, description: 'The 1-based index of the first resource of this page.' },
      itemsPerPage: { type: 'integer', minimum: 0, description: 'How many resources this page holds.' },
      Resources: { type: 'array', items: ref(item) },
    },
  };
}

/** An attribute definition of a schema document (RFC 7643 §7), recursive through `subAttributes`. */
const SchemaAttribute: JsonSchema = {
  type: 'object',
  description: 'An attribute definition (RFC 7643 §7).',
  required: ['name', 'type', 'multiValued', 'required', 'mutability', 'returned'],
  properties: {
    name: { type: 'string' },
    type: { enum: ['string', 'boolean', 'decimal', 'integer', 'dateTime', 'reference', 'complex', 'binary'] },
    multiValued: { type: 'boolean' },
    description: { type: 'string' },
    required: { type: 'boolean' },
    canonicalValues: { type: 'array', items: { type: 'string' } },
    caseExact: { type: 'boolean' },
    mutability: { enum: ['readOnly', 'readWrite', 'immutable', 'writeOnly'] },
    returned: { enum: ['always', 'never', 'default', 'request'] },
    uniqueness: { enum: ['none', 'server', 'global'] },
    referenceTypes: { type: 'array', items: { type: 'string' } },
    subAttributes: { type: 'array', items: ref('SchemaAttribute') },
  },
};

/**
 * The ServiceProviderConfig schema with `authenticationSchemes[].primary`, which the service
 * sends as RFC 7643 §8.5's example does, though §5 (and so SCIMMY's definition) leaves it out.
 */
function withPrimaryScheme(schema: JsonSchema): JsonSchema {
  const properties = schema.properties as Record<string, { items: { properties: JsonSchema } }>;
  const schemes = properties.authenticationSchemes!;
  schemes.items.properties.primary = { type: 'boolean', description: 'True for the scheme clients should use.' };
  return schema;
}

/** The SCIM messages and resources, by component name. */
function componentSchemas(): Record<string, JsonSchema> {
  return {
    User: resourceJsonSchema(userDefinition, 'projected'),
    UserRequest: resourceJsonSchema(userDefinition, 'request'),
    Group: resourceJsonSchema(groupDefinition, 'projected'),
    GroupRequest: resourceJsonSchema(groupDefinition, 'request'),
    ServiceProviderConfig: withPrimaryScheme(resourceJsonSchema(SCIMMY.Schemas.ServiceProviderConfig.definition)),
    ResourceType: resourceJsonSchema(SCIMMY.Schemas.ResourceType.definition),
    Schema: {
      type: 'object',
      description: 'A schema document (RFC 7643 §7).',
      required: ['schemas', 'id', 'name', 'attributes', 'meta'],
      properties: {
        schemas: messageUrn(URN.schema),
        id: { type: 'string', description: 'The schema URN.' },
        name: { type: 'string' },
        description: { type: 'string' },
        attributes: { type: 'array', items: ref('SchemaAttribute') },
        meta: {
          type: 'object',
          required: ['resourceType', 'location'],
          properties: { resourceType: { const: 'Schema' }, location: { type: 'string', format: 'uri' } },
        },
      },
    },
    SchemaAttribute,
    UserList: listSchema('User'),
    GroupList: listSchema('Group'),
    ResourceTypeList: listSchema('ResourceType'),
    SchemaList: listSchema('Schema'),
    PatchOp: {
      type: 'object',
      description:
        'A PATCH request (RFC 7644 §3.5.2). `op` is read in any case (`Replace`), `schemas` may be left out, ' +
        `and a request holds at most ${MAX_PATCH_OPERATIONS} operations.`,
      required: ['Operations'],
      properties: {
        schemas: messageUrn(URN.patchOp),
        Operations: {
          type: 'array',
          minItems: 1,
          maxItems: MAX_PATCH_OPERATIONS,
          items: {
            type: 'object',
            required: ['op'],
            properties: {
              op: { type: 'string', pattern: '^([Aa][Dd][Dd]|[Rr][Ee][Mm][Oo][Vv][Ee]|[Rr][Ee][Pp][Ll][Aa][Cc][Ee])$', examples: ['replace'] },
              path: { type: 'string', description: 'An attribute path, with a value filter if any (`emails[type eq "work"].value`); required by `remove`.' },
              value: { description: 'The value to add or replace with; without `path`, an object of attributes.' },
            },
          },
        },
      },
    },
    Error: {
      type: 'object',
      description: 'A SCIM error (RFC 7644 §3.12).',
      required: ['schemas', 'status', 'detail'],
      properties: {
        schemas: messageUrn(URN.error),
        status: { type: 'string', pattern: '^[45][0-9]{2}$', description: 'The HTTP status, as a string.' },
        scimType: {
          enum: ['invalidFilter', 'invalidPath', 'invalidValue', 'invalidSyntax', 'mutability', 'noTarget', 'uniqueness'],
          description: 'The kind of bad request or conflict (RFC 7644 §3.12, Table 9).',
        },
        detail: { type: 'string', description: 'What went wrong, for people.' },
      },
    },
  };
}

/** `Retry-After`, sent with 429 and 503. */
const RetryAfter = { description: 'Seconds to wait before retrying (RFC 9110 §10.2.3).', schema: { type: 'integer', minimum: 0 } };

/** Headers of error answers, by status. */
const ERROR_HEADERS: Partial<Record<number, Record<string, object>>> = {
  401: { 'WWW-Authenticate': { description: 'The Bearer challenge (RFC 6750 §3).', schema: { type: 'string' } } },
  429: { 'Retry-After': RetryAfter },
  503: { 'Retry-After': RetryAfter },
};

/** What every SCIM request can be answered with: addressing, the key, its scope, limits, availability. */
const EVERY_REQUEST: readonly ErrorCode[] = ['bad_request', ...WORKSPACE_REQUEST_ERRORS];
/** What a request with a body can be answered with besides. */
const WITH_BODY: readonly ErrorCode[] = ['malformed_json', 'invalid_syntax', 'invalid_value', 'validation_failed', 'payload_too_large', 'unsupported_media_type'];

/** The error responses of `codes` (and of every request), grouped by the status SCIM sends them with. */
function errorResponses(codes: readonly ErrorCode[]): Record<string, object> {
  const byStatus = new Map<number, Array<[ErrorCode, object]>>();
  for (const code of new Set([...EVERY_REQUEST, ...codes])) {
    const { status, body } = examples.errorExample(code);
    byStatus.set(status, [...(byStatus.get(status) ?? []), [code, body]]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => {
      const kinds = [...new Set(list.map(([, body]) => (body as { scimType?: string }).scimType).filter(Boolean))];
      const headers = ERROR_HEADERS[status];
      return [
        String(status),
        {
          description: `A SCIM error${kinds.length > 0 ? `; \`scimType\` is ${kinds.map((k) => `\`${k}\``).join(' or ')}` : ''}.`,
          ...(headers ? { headers } : {}),
          content: {
            [SCIM_JSON]: {
              schema: ref('Error'),
              examples: Object.fromEntries(list.map(([code, body]) => [code, { value: body }])),
            },
          },
        },
      ];
    }),
  );
}

/** A success answer in `application/scim+json`. */
function scimResponse(description: string, schema: string, example: unknown, headers?: Record<string, object>): object {
  return { description, ...(headers ? { headers } : {}), content: { [SCIM_JSON]: { schema: ref(schema), example } } };
}

/** A request body, accepted as `application/scim+json` or `application/json` (RFC 7644 §3.1). */
function requestBody(schema: string, example: unknown): object {
  const media = { schema: ref(schema), example };
  return { required: true, content: { [SCIM_JSON]: media, 'application/json': media } };
}

const ETag = { description: 'The user\'s version, as `meta.version`; send it back in `If-Match`.', schema: { type: 'string' } };
const Location = { description: 'The new resource\'s URL, as `meta.location`.', schema: { type: 'string', format: 'uri' } };

/** A query parameter. */
function query(name: string, description: string, schema: object, example: unknown): object {
  return { name, in: 'query', required: false, description, schema, example };
}

/** `attributes` and `excludedAttributes` (RFC 7644 §3.4.2.5, §3.9): which attributes an answer shows. */
const PROJECTION = [
  query('attributes', 'Comma-separated attribute paths the answer shows (besides `schemas` and `id`); unknown names are ignored.', { type: 'string' }, 'userName,name.familyName'),
  query('excludedAttributes', 'Comma-separated attribute paths the answer leaves out.', { type: 'string' }, 'roles'),
];

/** Paging and filtering of a list (RFC 7644 §3.4.2). */
const LIST = [
  query('filter', `A filter (RFC 7644 §3.4.2.2), at most ${MAX_FILTER_LENGTH} characters.`, { type: 'string', maxLength: MAX_FILTER_LENGTH }, 'userName eq "ada@example.com"'),
  query('startIndex', 'The 1-based index of the first resource; below 1 reads as 1.', { type: 'integer', default: 1 }, 1),
  query('count', `Resources per page: ${DEFAULT_COUNT} unless given, at most ${MAX_COUNT} (a larger count is lowered); negative reads as 0.`, { type: 'integer', default: DEFAULT_COUNT }, 100),
  ...PROJECTION,
];

const IF_MATCH = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description: 'Change only this version of the user (an ETag, or `*`); another version → 412.',
  schema: { type: 'string' },
  example: '"3"',
};

/** The `{id}` path parameter of a resource. */
function idParameter(what: string, example: string): object {
  return { name: 'id', in: 'path', required: true, description: `The ${what}'s id.`, schema: { type: 'string' }, example };
}

/** One operation. */
function operation(tag: string, operationId: string, summary: string, description: string, fields: Record<string, unknown>): object {
  return { tags: [tag], operationId, summary, description, ...fields };
}

const USER_ID = idParameter('user', examples.userExample.id as string);
const GROUP_ID = idParameter('group', examples.groupExample.id as string);
const USER_CHANGE_ERRORS: readonly ErrorCode[] = ['invalid_parameter', 'user_not_found', 'precondition_failed', 'user_already_exists', 'last_owner', 'unknown_product', 'unknown_product_role'];
const PATCH_ERRORS: readonly ErrorCode[] = ['invalid_path', 'no_target', 'mutability'];

function userPaths(): Record<string, object> {
  const user = (description: string, status: number) => ({
    [status]: scimResponse(description, 'User', examples.userExample, { ETag, ...(status === 201 ? { Location } : {}) }),
  });
  return {
    '/Users': {
      get: operation('Users', 'listUsers', 'List users', 'The users of the workspace (not those deleted through SCIM), oldest first, filtered and paged.', {
        parameters: LIST,
        responses: { 200: scimResponse('A page of users.', 'UserList', examples.userListExample), ...errorResponses(['invalid_filter', 'invalid_value', 'invalid_parameter']) },
      }),
      post: operation('Users', 'createUser', 'Create a user', 'Creates a user, or reactivates the deactivated user with that `userName` (the email). Unknown attributes are ignored.', {
        parameters: PROJECTION,
        requestBody: requestBody('UserRequest', examples.userRequestExample),
        responses: { ...user('The user created.', 201), ...errorResponses([...WITH_BODY, 'user_already_exists', 'unknown_product', 'unknown_product_role']) },
      }),
    },
    '/Users/{id}': {
      get: operation('Users', 'getUser', 'Read a user', 'One user; 404 once deleted through SCIM.', {
        parameters: [USER_ID, ...PROJECTION],
        responses: { ...user('The user.', 200), ...errorResponses(['invalid_value', 'invalid_parameter', 'user_not_found']) },
      }),
      put: operation('Users', 'replaceUser', 'Replace a user', 'Replaces the user\'s attributes; roles, workspace role and status are kept when the body leaves them out.', {
        parameters: [USER_ID, IF_MATCH, ...PROJECTION],
        requestBody: requestBody('UserRequest', examples.userRequestExample),
        responses: { ...user('The user replaced.', 200), ...errorResponses([...WITH_BODY, ...USER_CHANGE_ERRORS]) },
      }),
      patch: operation('Users', 'patchUser', 'Change a user', 'Applies PATCH operations (RFC 7644 §3.5.2) and answers with the user, also when nothing changed.', {
        parameters: [USER_ID, IF_MATCH, ...PROJECTION],
        requestBody: requestBody('PatchOp', examples.userPatchExample),
        responses: { ...user('The user changed.', 200), ...errorResponses([...WITH_BODY, ...USER_CHANGE_ERRORS, ...PATCH_ERRORS]) },
      }),
      delete: operation('Users', 'deleteUser', 'Delete a user', 'Deactivates the user, who answers 404 here until a POST of the same `userName`.', {
        parameters: [USER_ID, IF_MATCH],
        responses: { 204: { description: 'Deleted.' }, ...errorResponses(['invalid_parameter', 'user_not_found', 'precondition_failed', 'last_owner']) },
      }),
    },
  };
}

function groupPaths(): Record<string, object> {
  const group = (description: string, status: number) => ({
    [status]: scimResponse(description, 'Group', examples.groupExample, status === 201 ? { Location } : undefined),
  });
  const GROUP_CHANGE_ERRORS: readonly ErrorCode[] = [...WITH_BODY, 'group_not_found', 'mutability', 'unknown_product_role'];
  return {
    '/Groups': {
      get: operation('Groups', 'listGroups', 'List groups', `The product roles linked as groups, in linking order, filtered and paged; each with up to ${MAX_GROUP_MEMBERS} members.`, {
        parameters: LIST,
        responses: { 200: scimResponse('A page of groups.', 'GroupList', examples.groupListExample), ...errorResponses(['invalid_filter', 'invalid_value', 'invalid_parameter']) },
      }),
      post: operation('Groups', 'createGroup', 'Link a group', 'Links the product role named by `displayName` (`"product:role"`) as a group, and grants it to the `members`.', {
        parameters: PROJECTION,
        requestBody: requestBody('GroupRequest', examples.groupRequestExample),
        responses: { ...group('The group linked.', 201), ...errorResponses([...WITH_BODY, 'group_exists', 'unknown_product', 'unknown_product_role']) },
      }),
    },
    '/Groups/{id}': {
      get: operation('Groups', 'getGroup', 'Read a group', `One group with up to ${MAX_GROUP_MEMBERS} members.`, {
        parameters: [GROUP_ID, ...PROJECTION],
        responses: { ...group('The group.', 200), ...errorResponses(['invalid_value', 'invalid_parameter', 'group_not_found']) },
      }),
      put: operation('Groups', 'replaceGroup', 'Replace a group', 'Sets `externalId` and, when the body has `members`, exactly those members; `displayName` cannot change.', {
        parameters: [GROUP_ID, ...PROJECTION],
        requestBody: requestBody('GroupRequest', examples.groupRequestExample),
        responses: { ...group('The group replaced.', 200), ...errorResponses(GROUP_CHANGE_ERRORS) },
      }),
      patch: operation('Groups', 'patchGroup', 'Change a group', 'Applies PATCH operations: members added or removed become grants and revocations of the role.', {
        parameters: [GROUP_ID, ...PROJECTION],
        requestBody: requestBody('PatchOp', examples.groupPatchExample),
        responses: {
          ...group('The group changed, when `attributes` or `excludedAttributes` ask for it.', 200),
          204: { description: 'Changed (without `attributes` or `excludedAttributes`).' },
          ...errorResponses([...GROUP_CHANGE_ERRORS, ...PATCH_ERRORS]),
        },
      }),
      delete: operation('Groups', 'deleteGroup', 'Unlink a group', 'Revokes the role from every member and unlinks it.', {
        parameters: [GROUP_ID],
        responses: { 204: { description: 'Unlinked.' }, ...errorResponses(['group_not_found']) },
      }),
    },
  };
}

function discoveryPaths(): Record<string, object> {
  const discovery = (operationId: string, summary: string, description: string, fields: Record<string, unknown>) => ({
    get: operation('Discovery', operationId, summary, description, fields),
  });
  return {
    '/ServiceProviderConfig': discovery('getServiceProviderConfig', 'Service provider configuration', 'What the service supports (RFC 7643 §5).', {
      responses: { 200: scimResponse('The configuration.', 'ServiceProviderConfig', examples.serviceProviderConfigExample), ...errorResponses([]) },
    }),
    '/ResourceTypes': discovery('listResourceTypes', 'List resource types', 'User and Group (RFC 7643 §6).', {
      responses: { 200: scimResponse('Every resource type.', 'ResourceTypeList', examples.resourceTypeListExample), ...errorResponses([]) },
    }),
    '/ResourceTypes/{id}': discovery('getResourceType', 'Read a resource type', 'One resource type by id (`User`, `Group`).', {
      parameters: [{ name: 'id', in: 'path', required: true, description: 'The resource type\'s id.', schema: { type: 'string' }, example: 'User' }],
      responses: { 200: scimResponse('The resource type.', 'ResourceType', examples.resourceTypeExample), ...errorResponses(['not_found']) },
    }),
    '/Schemas': discovery('listSchemas', 'List schemas', 'The User and Group schemas and the User extensions (RFC 7643 §7).', {
      responses: { 200: scimResponse('Every schema.', 'SchemaList', examples.schemaListExample), ...errorResponses([]) },
    }),
    '/Schemas/{id}': discovery('getSchema', 'Read a schema', 'One schema by its URN.', {
      parameters: [{ name: 'id', in: 'path', required: true, description: 'The schema\'s URN.', schema: { type: 'string' }, example: URN.wumUser }],
      responses: { 200: scimResponse('The schema.', 'Schema', examples.schemaExample), ...errorResponses(['not_found']) },
    }),
  };
}

/**
 * The OpenAPI 3.1 document of the SCIM service: its server is the SCIM base on a workspace's
 * host (`http://{workspace}.<baseDomain>:<port>/scim/v2`), every operation needs an API key
 * with scope `scim` as a bearer token, every body is `application/scim+json`, every error a
 * SCIM error. A new object on each call. Source: RFC 7643, RFC 7644; docs/contract.md Part B,
 * SCIM 2.0 provisioning; docs/api.md, "SCIM 2.0 provisioning".
 */
export function scimOpenApiDocument(server: { readonly baseDomain: string; readonly port: number }): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'wum — SCIM 2.0 provisioning',
      version: '1.0.0',
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'SCIM 2.0 (RFC 7643, RFC 7644) for identity providers: users and groups (product roles) of one workspace, on ' +
        "the workspace's own host. Authenticate with an API key of the workspace that has the scope `scim`, as " +
        '`Authorization: Bearer <key>`. The native API is described at `/api/external/v2/openapi.json`.',
    },
    servers: [
      {
        url: `http://{workspace}.${server.baseDomain}:${server.port}${SCIM_PREFIX}`,
        variables: { workspace: { default: 'demo', description: 'The workspace subdomain.' } },
      },
    ],
    security: [{ bearerApiKey: ['scim'] }],
    tags: [
      { name: 'Users', description: 'Users of the workspace (RFC 7644 §3)' },
      { name: 'Groups', description: 'Product roles linked as groups; members hold the role' },
      { name: 'Discovery', description: 'What the service supports (RFC 7644 §4)' },
    ],
    paths: { ...userPaths(), ...groupPaths(), ...discoveryPaths() },
    components: {
      securitySchemes: {
        bearerApiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key of the workspace with the scope `scim` (or `*`), as `Authorization: Bearer <key>`; `X-Api-Key` is not read here.',
        },
      },
      schemas: componentSchemas(),
    },
  };
}
