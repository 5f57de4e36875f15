import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { Type } from '@sinclair/typebox';
import { createApiKey, listApiKeys, revokeApiKey } from '../../../core/api-keys/api-keys-service.ts';
import { ADMIN_EXAMPLES, ApiKeySchema, CreateApiKeyBody, CreateOwnApiKeyBody, CreatedApiKeySchema, toWireApiKey, toWireCreatedApiKey } from '../../schemas/admin.ts';
import { jsonResponse, problemResponses } from '../../schemas/common.ts';
import type { RouteMount } from '../route-mount.ts';

const { createdApiKey, apiKey } = ADMIN_EXAMPLES;

/**
 * Routes of a workspace's API keys: create, list, revoke; mounted in the operator API and, for
 * the scope `keys:write`, in the workspace's own (docs/api.md, "Self-service"), where a key is
 * never given, nor revoked when it holds, a scope the caller lacks and `scopes` must be given.
 * Source: docs/contract.md Part B, Operator interface.
 */
export async function apiKeysRoutes(app: FastifyInstance, options: { store: Store; mount: RouteMount }): Promise<void> {
  const { store, mount } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const collection = `${mount.base}/api-keys`;
  const security = mount.security('keys:write');
  const tags = mount.tags('api-keys');
  // The workspace's body is the operator's with `scopes` required: the handler reads both alike.
  const body = mount.side === 'operator' ? CreateApiKeyBody : (CreateOwnApiKeyBody as unknown as typeof CreateApiKeyBody);

  api.post(collection, {
    schema: {
      operationId: mount.pick('createApiKey', 'createOwnApiKey'),
      summary: 'Create an API key (the plaintext is shown only in this response)',
      description: mount.pick(
        'Adds an API key to the workspace, with a name, the scopes it may use (every scope when omitted) and an optional ' +
          'expiry. A workspace can hold several keys: add the new one, then revoke the old. The body may be omitted.',
        'Adds an API key to the workspace, with a name, the scopes it may use (required) and an optional expiry. The ' +
          'scopes must be ones the calling key (or person) holds, else `403 insufficient_scope` naming those it lacks: ' +
          'only a credential of every scope (`*`, as an owner signed in to the console) can make a `*` key.',
      ),
      tags,
      security,
      params: Type.Object(mount.params),
      body,
      response: {
        201: jsonResponse('The new key with its plaintext, shown only here.', CreatedApiKeySchema, createdApiKey),
        ...problemResponses(...mount.errors, 'unsupported_media_type', 'malformed_json', 'validation_failed'),
      },
    },
    config: { optionalBody: mount.side === 'operator' },
    // No body at all is an empty one: every field of the operator's has a default.
    preValidation: async (request) => {
      if (mount.side === 'operator') request.body ??= {};
    },
    handler: async (request, reply) => {
      const { name, scopes, expires_at: expiresAt } = request.body;
      const key = await createApiKey(store, mount.subdomain(request), mount.actor(request), {
        name,
        scopes,
        expiresAt: expiresAt === undefined ? null : new Date(expiresAt),
      });
      return reply.code(201).send(toWireCreatedApiKey(key));
    },
  });

  api.get(collection, {
    schema: {
      operationId: mount.pick('listApiKeys', 'listOwnApiKeys'),
      summary: "List a workspace's API keys (never the plaintext)",
      description: 'Every key of the workspace, revoked ones included, oldest first.',
      tags,
      security,
      params: Type.Object(mount.params),
      response: {
        200: jsonResponse(
          'The workspace\'s keys.',
          Type.Object({ api_keys: Type.Array(ApiKeySchema, { description: 'Oldest first.' }) }),
          { api_keys: [apiKey] },
        ),
        ...problemResponses(...mount.errors),
      },
    },
    handler: async (request) => ({
      api_keys: (await listApiKeys(store, mount.subdomain(request))).map(toWireApiKey),
    }),
  });

  api.delete(`${collection}/:id`, {
    schema: {
      operationId: mount.pick('revokeApiKey', 'revokeOwnApiKey'),
      summary: 'Revoke an API key (idempotent)',
      description:
        'Revokes the key at once: requests carrying it get `401 invalid_api_key`. Revoking it again succeeds.' +
        mount.pick('', ' A key holding a scope the calling key lacks is not revoked: `403 insufficient_scope`.'),
      tags,
      security,
      params: Type.Object({
        ...mount.params,
        id: Type.String({ description: 'The key\'s id.', examples: ['3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30'] }),
      }),
      response: { 204: { type: 'null', description: 'Revoked, or already revoked.' }, ...problemResponses(...mount.errors, 'api_key_not_found') },
    },
    handler: async (request, reply) => {
      await revokeApiKey(store, mount.subdomain(request), request.params.id, mount.actor(request));
      return reply.code(204).send();
    },
  });
}
