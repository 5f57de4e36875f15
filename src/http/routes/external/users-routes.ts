import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import type { Actor } from '../../../core/actor.ts';
import type { Store } from '../../../core/ports.ts';
import { addUser, deactivateUser, getUser, listUsers } from '../../../core/users/users-service.ts';
import { paginationLinks } from '../../link-header.ts';
import { rejectOtherMethods } from '../../method-not-allowed.ts';
import { tenantOf } from '../../plugins/tenant.ts';
import { problemResponses, toWirePagination } from '../../schemas/common.ts';
import { AddUserBody, EmailParams, ListUsersQuery, UserListSchema, UserSchema, toWireUser } from '../../schemas/users.ts';

const AUTH_ERRORS = ['workspace_not_found', 'missing_api_key', 'invalid_api_key', 'rate_limited'] as const;

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
      summary: 'Add a user, or reactivate a deactivated one',
      tags: ['users'],
      body: AddUserBody,
      response: {
        201: Type.Ref(UserSchema),
        ...problemResponses(...AUTH_ERRORS, 'unsupported_media_type', 'malformed_json', 'payload_too_large',
          'validation_failed', 'unknown_product', 'unknown_product_role', 'user_already_exists',
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
      summary: 'List users, oldest first',
      tags: ['users'],
      querystring: ListUsersQuery,
      response: { 200: UserListSchema, ...problemResponses(...AUTH_ERRORS, 'invalid_parameter') },
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
      summary: 'Get one user, of any status',
      tags: ['users'],
      params: EmailParams,
      response: { 200: Type.Ref(UserSchema), ...problemResponses(...AUTH_ERRORS, 'user_not_found') },
    },
    handler: async (request) => toWireUser(await getUser(store, tenantOf(request).workspace.id, request.params.email)),
  });

  api.delete('/users/:email', {
    schema: {
      summary: 'Deactivate a user (idempotent)',
      tags: ['users'],
      params: EmailParams,
      response: {
        204: { type: 'null', description: 'Deactivated, or already deactivated.' },
        ...problemResponses(...AUTH_ERRORS, 'user_not_found', 'last_owner', 'idempotency_key_reused', 'idempotency_key_in_use'),
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
