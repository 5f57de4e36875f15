import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import type { Actor } from '../../../core/actor.ts';
import type { Store } from '../../../core/ports.ts';
import { addUser, deactivateUser, getUser, listUsers } from '../../../core/users/users-service.ts';
import { paginationLinks } from '../../link-header.ts';
import { rejectOtherMethods } from '../../method-not-allowed.ts';
import { tenantOf } from '../../plugins/tenant.ts';
import { EXTERNAL_API_ERRORS, LinkHeader, jsonResponse, problemResponses, toWirePagination } from '../../schemas/common.ts';
import {
  AddUserBody,
  EmailParams,
  ListUsersQuery,
  USER_EXAMPLE,
  USER_LIST_EXAMPLE,
  UserListSchema,
  UserSchema,
  toWireUser,
} from '../../schemas/users.ts';

/** The actor of an external-API change: the API key that made it. */
function keyActor(request: FastifyRequest): Actor {
  return { type: 'api_key', id: tenantOf(request).apiKeyId, requestId: request.id };
}

/** Path of a user resource, for `Location`. */
export function userLocation(prefix: string, email: string): string {
  return `${prefix}/users/${encodeURIComponent(email)}`;
}

/**
 * `POST /users`, `GET /users`, `GET /users/{email}`, `DELETE /users/{email}` of the external API.
 * Source: SPEC.md Part A (endpoints) and Part B (Users, Listing).
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
        'user_already_exists`. Send an `Idempotency-Key` to make retries safe.',
      tags: ['users'],
      body: AddUserBody,
      response: {
        201: jsonResponse(
          'The user, added (`created_at` = `updated_at`) or reactivated (`updated_at` later). `Location` points at it.',
          Type.Ref(UserSchema),
          USER_EXAMPLE,
          { Location: { type: 'string', description: 'Path of the user: `/api/external/v2/users/{email}`.' } },
        ),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'unsupported_media_type', 'malformed_json', 'payload_too_large',
          'validation_failed', 'invalid_parameter', 'unknown_product', 'unknown_product_role', 'user_already_exists',
          'idempotency_key_reused', 'idempotency_key_in_use'),
      },
    },
    config: { idempotent: true },
    preValidation: async (request) => {
      const body = request.body as { user?: { email?: unknown } } | undefined;
      if (typeof body?.user?.email === 'string') body.user.email = body.user.email.trim();
    },
    handler: async (request, reply) => {
      const { user } = request.body as Static<typeof AddUserBody>;
      const result = await addUser(
        store,
        tenantOf(request).workspace.id,
        {
          email: user.email,
          role: user.role,
          apps: user.apps,
          firstName: user.first_name ?? undefined,
          lastName: user.last_name ?? undefined,
        },
        keyActor(request),
      );
      return reply.code(201).header('location', userLocation(prefix, result.user.email)).send(toWireUser(result.user));
    },
  });

  api.get('/users', {
    schema: {
      operationId: 'listUsers',
      summary: 'List users, oldest first',
      description:
        'One page of the workspace\'s users in a stable order (by creation), active ones unless `status` says ' +
        'otherwise. A page past the end has an empty `users` array: an empty array means the end of the data.',
      tags: ['users'],
      querystring: ListUsersQuery,
      response: {
        200: jsonResponse('A page of users with its pagination envelope.', UserListSchema, USER_LIST_EXAMPLE, { Link: LinkHeader }),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'invalid_parameter'),
      },
    },
    handler: async (request, reply) => {
      const query = request.query;
      const page = await listUsers(store, tenantOf(request).workspace.id, query.status, {
        pageNumber: query.page_number,
        pageSize: query.page_size,
      });
      reply.header('link', paginationLinks(request, page.pagination));
      return { users: page.items.map(toWireUser), ...toWirePagination(page.pagination) };
    },
  });
  rejectOtherMethods(app, '/users', ['GET', 'POST']);

  api.get('/users/:email', {
    schema: {
      operationId: 'getUser',
      summary: 'Get one user, of any status',
      description: 'The user with this email (matched case-insensitively), active or deactivated.',
      tags: ['users'],
      params: EmailParams,
      response: {
        200: jsonResponse('The user.', Type.Ref(UserSchema), USER_EXAMPLE),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'user_not_found'),
      },
    },
    handler: async (request) => toWireUser(await getUser(store, tenantOf(request).workspace.id, request.params.email)),
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
      params: EmailParams,
      response: {
        204: { type: 'null', description: 'Deactivated, or already deactivated.' },
        ...problemResponses(...EXTERNAL_API_ERRORS, 'invalid_parameter', 'user_not_found', 'last_owner',
          'idempotency_key_reused', 'idempotency_key_in_use'),
      },
    },
    config: { idempotent: true },
    handler: async (request, reply) => {
      await deactivateUser(store, tenantOf(request).workspace.id, request.params.email, keyActor(request));
      return reply.code(204).send();
    },
  });
  rejectOtherMethods(app, '/users/:email', ['GET', 'DELETE']);
}
