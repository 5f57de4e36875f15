import { depthLimitedJsonParser } from '../../json-body.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import type { Actor } from '../../../core/actor.ts';
import { keyActor } from '../../../core/api-keys/authenticate.ts';
import type { Store } from '../../../core/ports.ts';
import { searchCondition } from '../../../core/users/user-query.ts';
import type { AppRole, User } from '../../../core/users/user.ts';
import {
  addUser,
  type AddUserInput,
  deactivateUser,
  getUser,
  listUserAuditEvents,
  listUsers,
  updateUser,
} from '../../../core/users/users-service.ts';
import { parseIfMatch, userEtag } from '../../etag.ts';
import { paginationLinks } from '../../link-header.ts';
import { scoped } from '../../route-scopes.ts';
import { tenantOf } from '../../plugins/tenant.ts';
import { ADMIN_EXAMPLES, AuditEventSchema, pageOf, toWireAuditEvent } from '../../schemas/admin.ts';
import {
  EXTERNAL_API_ERRORS,
  LinkHeader,
  PageQuery,
  StringEnum,
  jsonResponse,
  problemResponses,
  toWirePagination,
} from '../../schemas/common.ts';
import {
  AddUserBody,
  EmailParams,
  ListUsersQuery,
  PatchUserBody,
  USER_EXAMPLE,
  USER_LIST_EXAMPLE,
  UserListSchema,
  UserSchema,
  toWireUser,
} from '../../schemas/users.ts';

/** The actor of an external-API change: the API key that made it. */
function requestActor(request: FastifyRequest): Actor {
  return keyActor(tenantOf(request), 'api_key', request.id);
}

/** Path of a user resource, for `Location`. */

/**
 * Trims `user.email` of a body before validation, so the email format check and the stored
 * value see the address without surrounding spaces (docs/contract.md Part B, Users: stored as
 * given after trimming).
 */
async function trimUserEmail(request: FastifyRequest): Promise<void> {
  const body = request.body as { user?: { email?: unknown } } | undefined;
  if (typeof body?.user?.email === 'string') body.user.email = body.user.email.trim();
}

/**
 * The path of a user's resource, for `Location` (`POST /users` answers `201` with it): `prefix`
 * is the API's base path (`/api/external/v2`), the email percent-encoded as one path segment.
 * Source: RFC 9110 §10.2.2; docs/api.md, "Users".
 */
export function userLocation(prefix: string, email: string): string {
  return `${prefix}/users/${encodeURIComponent(email)}`;
}

/** `ETag` of user responses (docs/contract.md Part B, Changing a user in place). */
const EtagHeader = { ETag: { type: 'string', description: 'The user\'s strong entity tag; send it in `If-Match` to change the user only if nobody else has.' } };
/** `If-Match` of the changing routes, documented (the value is read by {@link parseIfMatch}). */
const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      description: 'Change the user only if its `ETag` is one of these (`*`: any existing user); else `412 precondition_failed`.',
      examples: ['"3"'],
    }),
  ),
});

/** An instant of a body or query (RFC 3339 text, checked by the schema). */
function instant(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

/** `expires_at` of a body → the domain's (undefined: omitted, null: never). */
function expiresAtOf(value: Date | string | null | undefined): Date | null | undefined {
  return value === undefined || value === null ? value : instant(value);
}

/** Apps of a body → the domain's, with each grant's expiry. */
function appsOf(apps: ReadonlyArray<{ name: string; role: string; expires_at?: Date | string | null }>): AppRole[] {
  return apps.map((app) => (app.expires_at ? { name: app.name, role: app.role, expiresAt: instant(app.expires_at) } : { name: app.name, role: app.role }));
}

/**
 * The `user` of a valid `POST /users` body → the domain's input (null names: omitted). Also
 * what each row of a bulk import stands for (docs/contract.md Part B, "Importing users in bulk").
 */
export function addUserInputOf(user: Static<typeof AddUserBody>['user']): AddUserInput {
  return {
    email: user.email,
    role: user.role,
    apps: appsOf(user.apps),
    firstName: user.first_name ?? undefined,
    lastName: user.last_name ?? undefined,
    expiresAt: expiresAtOf(user.expires_at),
  };
}

/** Sends `user` with its ETag. */
function sendUser(reply: FastifyReply, user: User) {
  return reply.header('etag', userEtag(user.version)).send(toWireUser(user));
}

/**
 * `POST /users`, `GET /users`, `GET /users/{email}`, `DELETE /users/{email}` of the external API.
 * Source: docs/contract.md Part A (endpoints) and Part B (Users, Listing).
 */
export async function usersRoutes(app: FastifyInstance, options: { store: Store; prefix: string }): Promise<void> {
  const { store, prefix } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post('/users', {
    schema: {
      operationId: 'addUser',
      summary: 'Add a user, or reactivate a deactivated one',
      description:
        'Adds a user with a workspace role and product roles. For the email of a deactivated user it ' +
        'reactivates that user instead: `role` and `apps` are replaced, `first_name`/`last_name` replaced when ' +
        'given and kept when omitted (a new user gets `-`). An active user with the email → `409 ' +
        'user_already_exists`. Adding or reactivating a user with `role: owner` also needs the scope `owners:write` ' +
        '(else `403 insufficient_scope`). Send an `Idempotency-Key` to make retries safe.',
      tags: ['users'],
      security: scoped('users:write'),
      body: AddUserBody,
      response: {
        201: jsonResponse(
          'The user, added (`created_at` = `updated_at`) or reactivated (`updated_at` later). `Location` points at it.',
          Type.Ref(UserSchema),
          USER_EXAMPLE,
          { Location: { type: 'string', description: 'Path of the user: `/api/external/v2/users/{email}`.' }, ...EtagHeader },
        ),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'unsupported_media_type', 'malformed_json', 'payload_too_large',
          'validation_failed', 'invalid_parameter', 'unknown_product', 'unknown_product_role', 'user_already_exists',
          'expires_at_not_in_future', 'idempotency_key_reused', 'idempotency_key_in_use'),
      },
    },
    config: { idempotent: true },
    preValidation: trimUserEmail,
    handler: async (request, reply) => {
      const result = await addUser(store, tenantOf(request).workspace.id, addUserInputOf(request.body.user), requestActor(request));
      return sendUser(reply.code(201).header('location', userLocation(prefix, result.user.email)), result.user);
    },
  });

  api.get('/users', {
    schema: {
      operationId: 'listUsers',
      summary: 'List and find users',
      description:
        'One page of the workspace\'s users in a stable order (by creation unless `sort` says otherwise), active ones ' +
        'unless `status` says otherwise, narrowed by the `q`, `role` and `app` filters (all combined by AND). Totals ' +
        'count the filtered users exactly. A page past the end has an empty `users` array: an empty array means the ' +
        'end of the data.',
      tags: ['users'],
      security: scoped('users:read'),
      querystring: ListUsersQuery,
      response: {
        200: jsonResponse('A page of users with its pagination envelope.', UserListSchema, USER_LIST_EXAMPLE, { Link: LinkHeader }),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'invalid_parameter'),
      },
    },
    handler: async (request, reply) => {
      const query = request.query;
      const where = searchCondition({
        ...(query.q ? { q: query.q } : {}),
        ...(query.role ? { role: query.role } : {}),
        ...(query.app ? { app: query.app } : {}),
        ...(query.expires_before ? { expiresBefore: instant(query.expires_before) } : {}),
        ...(query.inactive_since ? { inactiveSince: instant(query.inactive_since) } : {}),
      });
      const page = await listUsers(
        store,
        tenantOf(request).workspace.id,
        { status: query.status, sort: query.sort, ...(where ? { where } : {}) },
        { pageNumber: query.page_number, pageSize: query.page_size },
      );
      reply.header('link', paginationLinks(request, page.pagination));
      return { users: page.items.map(toWireUser), ...toWirePagination(page.pagination) };
    },
  });

  api.get('/users/:email', {
    schema: {
      operationId: 'getUser',
      summary: 'Get one user, of any status',
      description: 'The user with this email (matched case-insensitively), active or deactivated.',
      tags: ['users'],
      security: scoped('users:read'),
      params: EmailParams,
      response: {
        200: jsonResponse('The user.', Type.Ref(UserSchema), USER_EXAMPLE, EtagHeader),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'invalid_parameter', 'user_not_found'),
      },
    },
    handler: async (request, reply) =>
      sendUser(reply, await getUser(store, tenantOf(request).workspace.id, { email: request.params.email })),
  });

  // application/merge-patch+json (RFC 7396) is accepted on PATCH only: a child context holds
  // its parser, so POST /users keeps answering 415 to anything but application/json.
  await app.register(async (patchScope) => {
    patchScope.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, depthLimitedJsonParser(patchScope));
    patchScope.withTypeProvider<TypeBoxTypeProvider>().patch('/users/:email', {
      schema: {
        operationId: 'updateUser',
        summary: 'Change a user in place',
        description:
          'Changes the fields given and keeps the others: `role`, `first_name`/`last_name` (null resets to `-`), ' +
          '`apps` (replaces the whole set), `email` (a rename; `409 user_already_exists` when another user of the ' +
          'workspace holds it), `status` (`deactivated` deactivates, `active` reactivates keeping role and apps). ' +
          '`{"user": {}}` changes nothing. Demoting or deactivating the last active owner → `409 last_owner`. ' +
          'Promoting a user to owner, reactivating an owner or changing an owner\'s email also needs the scope ' +
          '`owners:write` (else `403 insufficient_scope`). ' +
          'Send the `ETag` of the user in `If-Match` to be sure nobody changed it meanwhile (`412 ' +
          'precondition_failed`), and an `Idempotency-Key` to make retries safe. Accepts `application/json` and ' +
          '`application/merge-patch+json`.',
        tags: ['users'],
        security: scoped('users:write'),
        params: EmailParams,
        headers: IfMatchHeaders,
        body: PatchUserBody,
        consumes: ['application/json', 'application/merge-patch+json'],
        response: {
          200: jsonResponse('The user after the change, with its new `ETag`.', Type.Ref(UserSchema), USER_EXAMPLE, EtagHeader),
          ...problemResponses(...EXTERNAL_API_ERRORS, 'unsupported_media_type', 'malformed_json', 'payload_too_large',
            'validation_failed', 'invalid_parameter', 'user_not_found', 'precondition_failed', 'unknown_product',
            'unknown_product_role', 'user_already_exists', 'last_owner', 'expires_at_not_in_future', 'idempotency_key_reused',
            'idempotency_key_in_use'),
        },
      },
      config: { idempotent: true },
      preValidation: trimUserEmail,
      handler: async (request, reply) => {
        const { user } = request.body;
        const ifMatch = parseIfMatch(request.headers['if-match']);
        const result = await updateUser(
          store,
          tenantOf(request).workspace.id,
          { email: request.params.email },
          {
            ...(user.email === undefined ? {} : { email: user.email }),
            ...(user.role === undefined ? {} : { role: user.role }),
            ...(user.first_name === undefined ? {} : { firstName: user.first_name }),
            ...(user.last_name === undefined ? {} : { lastName: user.last_name }),
            ...(user.apps === undefined ? {} : { apps: appsOf(user.apps) }),
            ...(user.status === undefined ? {} : { status: user.status }),
            ...(user.expires_at === undefined ? {} : { expiresAt: expiresAtOf(user.expires_at) }),
          },
          requestActor(request),
          ifMatch === undefined ? {} : { ifMatch },
        );
        return sendUser(reply, result.user);
      },
    });
  });

  api.delete('/users/:email', {
    schema: {
      operationId: 'removeUser',
      summary: 'Deactivate a user (idempotent)',
      description:
        'Deactivates the user: it keeps its data but loses access, and is no longer listed by default. ' +
        'Deactivating an already deactivated user succeeds again and changes nothing, so a retry is safe. ' +
        'The last active owner cannot be deactivated (`409 last_owner`).',
      tags: ['users'],
      security: scoped('users:write'),
      params: EmailParams,
      headers: IfMatchHeaders,
      response: {
        204: { type: 'null', description: 'Deactivated, or already deactivated.' },
        ...problemResponses(...EXTERNAL_API_ERRORS, 'invalid_parameter', 'user_not_found', 'precondition_failed', 'last_owner',
          'idempotency_key_reused', 'idempotency_key_in_use'),
      },
    },
    config: { idempotent: true },
    handler: async (request, reply) => {
      const ifMatch = parseIfMatch(request.headers['if-match']);
      await deactivateUser(
        store,
        tenantOf(request).workspace.id,
        { email: request.params.email },
        requestActor(request),
        ifMatch === undefined ? {} : { ifMatch },
      );
      return reply.code(204).send();
    },
  });

  api.get('/users/:email/audit-events', {
    schema: {
      operationId: 'listUserAuditEvents',
      summary: "A user's audit history",
      description:
        'Every recorded change of this user (across renames), with actor, request id, before and after; oldest first ' +
        'unless `sort=-occurred_at`, paginated like users.',
      tags: ['users'],
      security: scoped('users:read'),
      params: EmailParams,
      querystring: Type.Object({
        ...PageQuery,
        sort: StringEnum(['occurred_at', '-occurred_at'], { default: 'occurred_at', description: 'Oldest first (default) or newest first.', examples: ['-occurred_at'] }),
      }),
      response: {
        200: jsonResponse(
          'A page of the user\'s audit events with its pagination envelope.',
          pageOf('audit_events', AuditEventSchema),
          { audit_events: [ADMIN_EXAMPLES.auditEvent], ...ADMIN_EXAMPLES.page(1) },
          { Link: LinkHeader },
        ),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'invalid_parameter', 'user_not_found'),
      },
    },
    handler: async (request, reply) => {
      const page = await listUserAuditEvents(
        store,
        tenantOf(request).workspace.id,
        { email: request.params.email },
        { pageNumber: request.query.page_number, pageSize: request.query.page_size },
        request.query.sort === '-occurred_at',
      );
      reply.header('link', paginationLinks(request, page.pagination));
      return { audit_events: page.items.map(toWireAuditEvent), ...toWirePagination(page.pagination) };
    },
  });
}
