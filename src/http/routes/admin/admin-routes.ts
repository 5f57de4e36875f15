import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Actor } from '../../../core/actor.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../../../core/api-keys/api-keys-service.ts';
import { listAllAuditEvents, listAuditEvents } from '../../../core/audit/audit-service.ts';
import type { Page } from '../../../core/pagination.ts';
import type { Store } from '../../../core/ports.ts';
import { deleteProduct, getProduct, listProducts, putProduct } from '../../../core/products/products-service.ts';
import {
  createWorkspace,
  deleteWorkspace,
  getWorkspace,
  listWorkspaces,
} from '../../../core/workspaces/workspaces-service.ts';
import { paginationLinks } from '../../link-header.ts';
import { rejectOtherMethods } from '../../method-not-allowed.ts';
import { requireAdminToken } from '../../plugins/admin-auth.ts';
import {
  ADMIN_EXAMPLES,
  AdminPageQuery,
  ApiKeySchema,
  AuditEventSchema,
  CreateWorkspaceBody,
  CreatedApiKeySchema,
  CreatedWorkspaceSchema,
  PutProductBody,
  WorkspaceSchema,
  pageOf,
  toWireApiKey,
  toWireAuditEvent,
  toWireCreatedApiKey,
  toWireWorkspace,
} from '../../schemas/admin.ts';
import { LinkHeader, jsonResponse, problemResponses, toWirePagination } from '../../schemas/common.ts';
import { ADMIN_PRODUCT_EXAMPLE, AdminProductSchema, PRODUCT_NAME_PATTERN, toAdminProduct } from '../../schemas/products.ts';

const adminActor = (request: FastifyRequest): Actor => ({ type: 'admin', id: null, requestId: request.id });
const Subdomain = Type.String({ description: 'The workspace\'s subdomain (case-insensitive).', examples: ['acme'] });
const SubdomainParams = Type.Object({ subdomain: Subdomain });
const ProductName = Type.String({ description: 'The product\'s name (case-sensitive).', examples: ['crm'] });
const ProductParams = Type.Object({ name: ProductName });
const tags = ['admin'];
const security = [{ adminToken: [] }];
/** Errors every admin route can answer: the token, and the service's own failures. */
const AUTH = ['invalid_admin_token', 'internal_error', 'service_unavailable'] as const;
const { workspace, createdApiKey, apiKey, auditEvent, page } = ADMIN_EXAMPLES;
const auditPage = jsonResponse('A page of audit events with its pagination envelope.', pageOf('audit_events', AuditEventSchema), {
  audit_events: [auditEvent],
  ...page(1),
}, { Link: LinkHeader });

/**
 * The operator API under `/admin/v1`: workspaces, their API keys and audit trail, and the
 * product catalogue. Source: SPEC.md Part B, Operator interface.
 */
export async function adminRoutes(
  app: FastifyInstance,
  options: { store: Store; adminToken: string },
): Promise<void> {
  const { store } = options;
  requireAdminToken(app, options.adminToken);
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  function listed<T, W>(request: FastifyRequest, reply: { header(k: string, v: string): unknown }, key: string, page: Page<T>, map: (t: T) => W) {
    reply.header('link', paginationLinks(request, page.pagination));
    return { [key]: page.items.map(map), ...toWirePagination(page.pagination) };
  }

  api.post('/workspaces', {
    schema: {
      operationId: 'createWorkspace',
      summary: 'Create a workspace and its first API key',
      description:
        'Creates a workspace at `{subdomain}.<base domain>` with a first API key, whose plaintext appears only ' +
        'in this response. A taken subdomain → `409 workspace_exists`.',
      tags,
      security,
      body: CreateWorkspaceBody,
      response: {
        201: jsonResponse(
          'The workspace and its first API key (plaintext shown only here).',
          CreatedWorkspaceSchema,
          { ...workspace, api_key: createdApiKey },
          { Location: { type: 'string', description: 'Path of the workspace: `/admin/v1/workspaces/{subdomain}`.' } },
        ), ...problemResponses(...AUTH, 'validation_failed', 'workspace_exists') },
    },
    handler: async (request, reply) => {
      const created = await createWorkspace(store, request.body.subdomain, request.body.name, adminActor(request));
      return reply
        .code(201)
        .header('location', `/admin/v1/workspaces/${created.workspace.subdomain}`)
        .send({ ...toWireWorkspace(created.workspace), api_key: toWireCreatedApiKey(created.apiKey) });
    },
  });

  api.get('/workspaces', {
    schema: {
      operationId: 'listWorkspaces',
      summary: 'List workspaces',
      description: 'One page of the workspaces, oldest first; an empty list means the end.',
      tags,
      security,
      querystring: AdminPageQuery,
      response: {
        200: jsonResponse('A page of workspaces with its pagination envelope.', pageOf('workspaces', WorkspaceSchema), {
          workspaces: [workspace],
          ...page(1),
        }, { Link: LinkHeader }), ...problemResponses(...AUTH, 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      const page = await listWorkspaces(store, { pageNumber: request.query.page_number, pageSize: request.query.page_size });
      return listed(request, reply, 'workspaces', page, toWireWorkspace);
    },
  });
  rejectOtherMethods(app, '/workspaces', ['GET', 'POST']);

  api.get('/workspaces/:subdomain', {
    schema: {
      operationId: 'getWorkspace',
      summary: 'Get a workspace',
      description: 'The workspace with this subdomain.',
      tags,
      security,
      params: SubdomainParams,
      response: { 200: jsonResponse('The workspace.', WorkspaceSchema, workspace), ...problemResponses(...AUTH, 'workspace_not_found') },
    },
    handler: async (request) => toWireWorkspace(await getWorkspace(store, request.params.subdomain)),
  });

  api.delete('/workspaces/:subdomain', {
    schema: {
      operationId: 'deleteWorkspace',
      summary: 'Delete a workspace with all its users, keys and audit trail',
      description: 'Deletes the workspace and everything in it, irreversibly. The deletion is audited.',
      tags,
      security,
      params: SubdomainParams,
      response: { 204: { type: 'null', description: 'Deleted.' }, ...problemResponses(...AUTH, 'workspace_not_found') },
    },
    handler: async (request, reply) => {
      await deleteWorkspace(store, request.params.subdomain, adminActor(request));
      return reply.code(204).send();
    },
  });
  rejectOtherMethods(app, '/workspaces/:subdomain', ['GET', 'DELETE']);

  api.post('/workspaces/:subdomain/api-keys', {
    schema: {
      operationId: 'createApiKey',
      summary: 'Create an API key (the plaintext is shown only in this response)',
      description: 'Adds an API key to the workspace. A workspace can hold several keys: add the new one, then revoke the old.',
      tags,
      security,
      params: SubdomainParams,
      response: { 201: jsonResponse('The new key with its plaintext, shown only here.', CreatedApiKeySchema, createdApiKey), ...problemResponses(...AUTH, 'workspace_not_found') },
    },
    handler: async (request, reply) => {
      const key = await createApiKey(store, request.params.subdomain, adminActor(request));
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

  api.get('/workspaces/:subdomain/audit-events', {
    schema: {
      operationId: 'listWorkspaceAuditEvents',
      summary: "List a workspace's audit events, oldest first",
      description: 'Every change made in the workspace (users, keys), with actor, request id, before and after.',
      tags,
      security,
      params: SubdomainParams,
      querystring: AdminPageQuery,
      response: {
        200: auditPage,
        ...problemResponses(...AUTH, 'workspace_not_found', 'invalid_parameter'),
      },
    },
    handler: async (request, reply) => {
      const page = await listAuditEvents(store, request.params.subdomain, {
        pageNumber: request.query.page_number,
        pageSize: request.query.page_size,
      });
      return listed(request, reply, 'audit_events', page, toWireAuditEvent);
    },
  });
  rejectOtherMethods(app, '/workspaces/:subdomain/audit-events', ['GET']);

  api.get('/audit-events', {
    schema: {
      operationId: 'listAuditEvents',
      summary: 'List every audit event, catalogue changes included, oldest first',
      description: 'Every change of every workspace, and of the product catalogue.',
      tags,
      security,
      querystring: AdminPageQuery,
      response: { 200: auditPage, ...problemResponses(...AUTH, 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      const page = await listAllAuditEvents(store, {
        pageNumber: request.query.page_number,
        pageSize: request.query.page_size,
      });
      return listed(request, reply, 'audit_events', page, toWireAuditEvent);
    },
  });
  rejectOtherMethods(app, '/audit-events', ['GET']);

  api.get('/products', {
    schema: {
      operationId: 'listCatalogueProducts',
      summary: 'List the product catalogue',
      description: 'Every product with its roles and timestamps, sorted by name.',
      tags,
      security,
      response: {
        200: jsonResponse(
          'The catalogue.',
          Type.Object({ products: Type.Array(AdminProductSchema, { description: 'Sorted by name.' }) }),
          { products: [ADMIN_PRODUCT_EXAMPLE] },
        ), ...problemResponses(...AUTH) },
    },
    handler: async () => ({ products: (await listProducts(store)).map(toAdminProduct) }),
  });
  rejectOtherMethods(app, '/products', ['GET']);

  api.put('/products/:name', {
    schema: {
      operationId: 'putCatalogueProduct',
      summary: 'Create a product or replace its roles',
      description:
        'Creates the product with these roles, or replaces the roles of an existing one (in the given order). ' +
        'Dropping a role an active user holds → `409 product_in_use`. Putting the same roles again changes nothing.',
      tags,
      security,
      params: Type.Object({
        name: Type.String({
          pattern: PRODUCT_NAME_PATTERN,
          description: 'The product\'s name: letters, digits and `._-`, 1-64 characters, case-sensitive.',
          examples: ['support'],
        }),
      }),
      body: PutProductBody,
      response: {
        200: jsonResponse('The product, its roles replaced (or unchanged).', AdminProductSchema, ADMIN_PRODUCT_EXAMPLE),
        201: jsonResponse('The product, created.', AdminProductSchema, ADMIN_PRODUCT_EXAMPLE),
        ...problemResponses(...AUTH, 'validation_failed', 'invalid_parameter', 'product_in_use'),
      },
    },
    handler: async (request, reply) => {
      const { product, created } = await putProduct(store, request.params.name, request.body.roles, adminActor(request));
      return reply.code(created ? 201 : 200).send(toAdminProduct(product));
    },
  });

  api.get('/products/:name', {
    schema: {
      operationId: 'getCatalogueProduct',
      summary: 'Get a product',
      description: 'The product with this name, its roles and timestamps.',
      tags,
      security,
      params: ProductParams,
      response: { 200: jsonResponse('The product.', AdminProductSchema, ADMIN_PRODUCT_EXAMPLE), ...problemResponses(...AUTH, 'product_not_found') },
    },
    handler: async (request) => toAdminProduct(await getProduct(store, request.params.name)),
  });

  api.delete('/products/:name', {
    schema: {
      operationId: 'deleteCatalogueProduct',
      summary: 'Remove a product (refused while an active user holds it)',
      description: 'Removes the product from the catalogue; refused with `409 product_in_use` while an active user holds one of its roles.',
      tags,
      security,
      params: ProductParams,
      response: { 204: { type: 'null', description: 'Removed.' }, ...problemResponses(...AUTH, 'product_not_found', 'product_in_use') },
    },
    handler: async (request, reply) => {
      await deleteProduct(store, request.params.name, adminActor(request));
      return reply.code(204).send();
    },
  });
  rejectOtherMethods(app, '/products/:name', ['GET', 'PUT', 'DELETE']);
}
