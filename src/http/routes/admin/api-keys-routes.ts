import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { rejectOtherMethods } from '../../method-not-allowed.ts';
import { Type } from '@sinclair/typebox';
import { createApiKey, listApiKeys, revokeApiKey } from '../../../core/api-keys/api-keys-service.ts';
import { ADMIN_EXAMPLES, ApiKeySchema, CreateApiKeyBody, CreatedApiKeySchema, toWireApiKey, toWireCreatedApiKey } from '../../schemas/admin.ts';
import { jsonResponse, problemResponses } from '../../schemas/common.ts';
import { AUTH, Subdomain, SubdomainParams, adminActor, security, tags } from './admin-common.ts';

const { createdApiKey, apiKey } = ADMIN_EXAMPLES;

/**
 * Operator routes of a workspace's API keys: create, list, revoke. Source: docs/contract.md Part B, Operator interface.
 */
export async function apiKeysRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post('/workspaces/:subdomain/api-keys', {
    schema: {
      operationId: 'createApiKey',
      summary: 'Create an API key (the plaintext is shown only in this response)',
      description:
        'Adds an API key to the workspace, with a name, the scopes it may use (every scope when omitted) and an optional ' +
        'expiry. A workspace can hold several keys: add the new one, then revoke the old. The body may be omitted.',
      tags,
      security,
      params: SubdomainParams,
      body: CreateApiKeyBody,
      response: { 201: jsonResponse('The new key with its plaintext, shown only here.', CreatedApiKeySchema, createdApiKey), ...problemResponses(...AUTH, 'workspace_not_found', 'unsupported_media_type', 'malformed_json', 'validation_failed') },
    },
    config: { optionalBody: true },
    // No body at all is an empty one: every field has a default.
    preValidation: async (request) => {
      request.body ??= {};
    },
    handler: async (request, reply) => {
      const { name, scopes, expires_at: expiresAt } = request.body;
      const key = await createApiKey(store, request.params.subdomain, adminActor(request), {
        name,
        scopes,
        expiresAt: expiresAt === undefined ? null : new Date(expiresAt),
      });
      return reply.code(201).send(toWireCreatedApiKey(key));
    },
  });

  api.get('/workspaces/:subdomain/api-keys', {
    schema: {
      operationId: 'listApiKeys',
      summary: "List a workspace's API keys (never the plaintext)",
      description: 'Every key of the workspace, revoked ones included, oldest first.',
      tags,
      security,
      params: SubdomainParams,
      response: {
        200: jsonResponse(
          'The workspace\'s keys.',
          Type.Object({ api_keys: Type.Array(ApiKeySchema, { description: 'Oldest first.' }) }),
          { api_keys: [apiKey] },
        ),
        ...problemResponses(...AUTH, 'workspace_not_found'),
      },
    },
    handler: async (request) => ({
      api_keys: (await listApiKeys(store, request.params.subdomain)).map(toWireApiKey),
    }),
  });
  rejectOtherMethods(app, '/workspaces/:subdomain/api-keys', ['GET', 'POST']);

  api.delete('/workspaces/:subdomain/api-keys/:id', {
    schema: {
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key (idempotent)',
      description: 'Revokes the key at once: requests carrying it get `401 invalid_api_key`. Revoking it again succeeds.',
      tags,
      security,
      params: Type.Object({
        subdomain: Subdomain,
        id: Type.String({ description: 'The key\'s id.', examples: ['3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30'] }),
      }),
      response: { 204: { type: 'null', description: 'Revoked, or already revoked.' }, ...problemResponses(...AUTH, 'workspace_not_found', 'api_key_not_found') },
    },
    handler: async (request, reply) => {
      await revokeApiKey(store, request.params.subdomain, request.params.id, adminActor(request));
      return reply.code(204).send();
    },
  });
  rejectOtherMethods(app, '/workspaces/:subdomain/api-keys/:id', ['DELETE']);
}
