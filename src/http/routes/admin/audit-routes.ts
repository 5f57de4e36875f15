import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { rejectOtherMethods } from '../../method-not-allowed.ts';
import { listAllAuditEvents, listAuditEvents } from '../../../core/audit/audit-service.ts';
import type { AuditFilter } from '../../../core/ports.ts';
import { ADMIN_EXAMPLES, AuditEventSchema, AuditQuery, WorkspaceAuditQuery, pageOf, toWireAuditEvent } from '../../schemas/admin.ts';
import { LinkHeader, jsonResponse, problemResponses } from '../../schemas/common.ts';
import { AUTH, SubdomainParams, listed, security, tags } from './admin-common.ts';

const { auditEvent, page } = ADMIN_EXAMPLES;

/** The audit filters of a query, as the domain takes them. */
function auditFilter(query: { action?: string; actor_type?: string; target_id?: string }): AuditFilter {
  return {
    ...(query.action === undefined ? {} : { action: query.action }),
    ...(query.actor_type === undefined ? {} : { actorType: query.actor_type }),
    ...(query.target_id === undefined ? {} : { targetId: query.target_id }),
  };
}
const auditPage = jsonResponse('A page of audit events with its pagination envelope.', pageOf('audit_events', AuditEventSchema), {
  audit_events: [auditEvent],
  ...page(1),
}, { Link: LinkHeader });

/**
 * Operator routes of the audit trail: one workspace's, and every event. Source: docs/contract.md Part B, Retries, limits and audit.
 */
export async function auditRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get('/workspaces/:subdomain/audit-events', {
    schema: {
      operationId: 'listWorkspaceAuditEvents',
      summary: "List a workspace's audit events, oldest first",
      description: 'Every change made in the workspace (users, keys), with actor, request id, before and after; `action`, `actor_type` and `target_id` narrow it.',
      tags,
      security,
      params: SubdomainParams,
      querystring: WorkspaceAuditQuery,
      response: {
        200: auditPage,
        ...problemResponses(...AUTH, 'workspace_not_found', 'invalid_parameter'),
      },
    },
    handler: async (request, reply) => {
      const { page_number: pageNumber, page_size: pageSize, ...filters } = request.query;
      const page = await listAuditEvents(store, request.params.subdomain, { pageNumber, pageSize }, auditFilter(filters));
      return listed(request, reply, 'audit_events', page, toWireAuditEvent);
    },
  });
  rejectOtherMethods(app, '/workspaces/:subdomain/audit-events', ['GET']);

  api.get('/audit-events', {
    schema: {
      operationId: 'listAuditEvents',
      summary: 'List every audit event, catalogue changes included, oldest first',
      description: 'Every change of every workspace, and of the product catalogue; `workspace`, `action`, `actor_type` and `target_id` narrow it.',
      tags,
      security,
      querystring: AuditQuery,
      response: { 200: auditPage, ...problemResponses(...AUTH, 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      const { page_number: pageNumber, page_size: pageSize, workspace, ...filters } = request.query;
      const page = await listAllAuditEvents(store, { pageNumber, pageSize }, {
        ...auditFilter(filters),
        ...(workspace === undefined ? {} : { workspace }),
      });
      return listed(request, reply, 'audit_events', page, toWireAuditEvent);
    },
  });
  rejectOtherMethods(app, '/audit-events', ['GET']);
}
