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
import { problemResponses, toWirePagination } from '../../schemas/common.ts';
import { AdminProductSchema, PRODUCT_NAME_PATTERN, toAdminProduct } from '../../schemas/products.ts';

const adminActor = (request: FastifyRequest): Actor => ({ type: 'admin', id: null, requestId: request.id });
const SubdomainParams = Type.Object({ subdomain: Type.String() });
const ProductParams = Type.Object({ name: Type.String() });
const tags = ['admin'];
const security = [{ adminToken: [] }];
const AUTH = 'invalid_admin_token' as const;

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
      summary: 'Create a workspace and its first API key',
      tags,
      security,
      body: CreateWorkspaceBody,
      response: { 201: CreatedWorkspaceSchema, ...problemResponses(AUTH, 'validation_failed', 'workspace_exists') },
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
      summary: 'List workspaces',
      tags,
      security,
      querystring: AdminPageQuery,
      response: { 200: pageOf('workspaces', WorkspaceSchema), ...problemResponses(AUTH, 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      const page = await listWorkspaces(store, { pageNumber: request.query.page_number, pageSize: request.query.page_size });
      return listed(request, reply, 'workspaces', page, toWireWorkspace);
    },
  });
  rejectOtherMethods(app, '/workspaces', ['GET', 'POST']);

  api.get('/workspaces/:subdomain', {
    schema: {
      summary: 'Get a workspace',
      tags,
      security,
      params: SubdomainParams,
      response: { 200: WorkspaceSchema, ...problemResponses(AUTH, 'workspace_not_found') },
    },
    handler: async (request) => toWireWorkspace(await getWorkspace(store, request.params.subdomain)),
  });

  api.delete('/workspaces/:subdomain', {
    schema: {
      summary: 'Delete a workspace with all its users, keys and audit trail',
      tags,
      security,
      params: SubdomainParams,
      response: { 204: { type: 'null' }, ...problemResponses(AUTH, 'workspace_not_found') },
    },
    handler: async (request, reply) => {
      await deleteWorkspace(store, request.params.subdomain, adminActor(request));
      return reply.code(204).send();
    },
  });
  rejectOtherMethods(app, '/workspaces/:subdomain', ['GET', 'DELETE']);

  api.post('/workspaces/:subdomain/api-keys', {
    schema: {
      summary: 'Create an API key (the plaintext is shown only in this response)',
      tags,
      security,
      params: SubdomainParams,
      response: { 201: CreatedApiKeySchema, ...problemResponses(AUTH, 'workspace_not_found') },
    },
    handler: async (request, reply) => {
      const key = await createApiKey(store, request.params.subdomain, adminActor(request));
      return reply.code(201).send(toWireCreatedApiKey(key));
    },
  });

  api.get('/workspaces/:subdomain/api-keys', {
    schema: {
      summary: "List a workspace's API keys (never the plaintext)",
      tags,
      security,
      params: SubdomainParams,
      response: {
        200: Type.Object({ api_keys: Type.Array(ApiKeySchema) }),
        ...problemResponses(AUTH, 'workspace_not_found'),
      },
    },
    handler: async (request) => ({
      api_keys: (await listApiKeys(store, request.params.subdomain)).map(toWireApiKey),
    }),
  });
  rejectOtherMethods(app, '/workspaces/:subdomain/api-keys', ['GET', 'POST']);

  api.delete('/workspaces/:subdomain/api-keys/:id', {
    schema: {
      summary: 'Revoke an API key (idempotent)',
      tags,
      security,
      params: Type.Object({ subdomain: Type.String(), id: Type.String() }),
      response: { 204: { type: 'null' }, ...problemResponses(AUTH, 'workspace_not_found', 'api_key_not_found') },
    },
    handler: async (request, reply) => {
      await revokeApiKey(store, request.params.subdomain, request.params.id, adminActor(request));
      return reply.code(204).send();
    },
  });
  rejectOtherMethods(app, '/workspaces/:subdomain/api-keys/:id', ['DELETE']);

  api.get('/workspaces/:subdomain/audit-events', {
    schema: {
      summary: "List a workspace's audit events, oldest first",
      tags,
      security,
      params: SubdomainParams,
      querystring: AdminPageQuery,
      response: {
        200: pageOf('audit_events', AuditEventSchema),
        ...problemResponses(AUTH, 'workspace_not_found', 'invalid_parameter'),
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
      summary: 'List every audit event, catalogue changes included, oldest first',
      tags,
      security,
      querystring: AdminPageQuery,
      response: { 200: pageOf('audit_events', AuditEventSchema), ...problemResponses(AUTH, 'invalid_parameter') },
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
      summary: 'List the product catalogue',
      tags,
      security,
      response: { 200: Type.Object({ products: Type.Array(AdminProductSchema) }), ...problemResponses(AUTH) },
    },
    handler: async () => ({ products: (await listProducts(store)).map(toAdminProduct) }),
  });
  rejectOtherMethods(app, '/products', ['GET']);

  api.put('/products/:name', {
    schema: {
      summary: "Create a product or replace its roles",
      tags,
      security,
      params: Type.Object({ name: Type.String({ pattern: PRODUCT_NAME_PATTERN }) }),
      body: PutProductBody,
      response: {
        200: AdminProductSchema,
        201: AdminProductSchema,
        ...problemResponses(AUTH, 'validation_failed', 'invalid_parameter', 'product_in_use'),
      },
    },
    handler: async (request, reply) => {
      const { product, created } = await putProduct(store, request.params.name, request.body.roles, adminActor(request));
      return reply.code(created ? 201 : 200).send(toAdminProduct(product));
    },
  });

  api.get('/products/:name', {
    schema: {
      summary: 'Get a product',
      tags,
      security,
      params: ProductParams,
      response: { 200: AdminProductSchema, ...problemResponses(AUTH, 'product_not_found') },
    },
    handler: async (request) => toAdminProduct(await getProduct(store, request.params.name)),
  });

  api.delete('/products/:name', {
    schema: {
      summary: 'Remove a product (refused while an active user holds it)',
      tags,
      security,
      params: ProductParams,
      response: { 204: { type: 'null' }, ...problemResponses(AUTH, 'product_not_found', 'product_in_use') },
    },
    handler: async (request, reply) => {
      await deleteProduct(store, request.params.name, adminActor(request));
      return reply.code(204).send();
    },
  });
  rejectOtherMethods(app, '/products/:name', ['GET', 'PUT', 'DELETE']);
}
