import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import {
  createWorkspace,
  deleteWorkspace,
  getWorkspace,
  listWorkspaces,
} from '../../../core/workspaces/workspaces-service.ts';
import {
  ADMIN_EXAMPLES,
  AdminPageQuery,
  CreateWorkspaceBody,
  CreatedWorkspaceSchema,
  WorkspaceSchema,
  pageOf,
  toWireCreatedApiKey,
  toWireWorkspace,
} from '../../schemas/admin.ts';
import { BODY_ERRORS, LinkHeader, jsonResponse, problemResponses } from '../../schemas/common.ts';
import { AUTH, SubdomainParams, adminActor, listed, security, tags } from './admin-common.ts';

const { workspace, createdApiKey, page } = ADMIN_EXAMPLES;

/**
 * Operator routes of workspaces: create (with a first API key), list, get, delete. Source: docs/contract.md Part B, Operator interface.
 */
export async function workspacesRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

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
        ), ...problemResponses(...AUTH, ...BODY_ERRORS, 'workspace_exists') },
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

  api.get('/workspaces/:subdomain', {
    schema: {
      operationId: 'getWorkspace',
      summary: 'Get a workspace',
      description: 'The workspace with this subdomain.',
      tags,
      security,
      params: SubdomainParams,
      response: { 200: jsonResponse('The workspace.', WorkspaceSchema, workspace), ...problemResponses(...AUTH, 'workspace_not_found', 'invalid_parameter') },
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
      response: { 204: { type: 'null', description: 'Deleted.' }, ...problemResponses(...AUTH, 'workspace_not_found', 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      await deleteWorkspace(store, request.params.subdomain, adminActor(request));
      return reply.code(204).send();
    },
  });
}
