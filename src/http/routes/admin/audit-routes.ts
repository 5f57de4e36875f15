import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import { rejectOtherMethods } from '../../method-not-allowed.ts';
import { listAllAuditEvents, listAuditEvents } from '../../../core/audit/audit-service.ts';
import type { AuditFilter } from '../../../core/ports.ts';
import { ADMIN_EXAMPLES, AuditEventSchema, AuditQuery, OwnAuditQuery, WorkspaceAuditQuery, pageOf, toWireAuditEvent } from '../../schemas/admin.ts';
import { LinkHeader, jsonResponse, problemResponses } from '../../schemas/common.ts';
import { AUTH, listed, security, tags } from './admin-common.ts';
import type { RouteMount } from '../route-mount.ts';

const { auditEvent, page } = ADMIN_EXAMPLES;

/** The audit filters and order of a query, as the domain takes them. */
function auditFilter(query: { action?: string; actor_type?: string; target_id?: string; sort?: string }): AuditFilter {
  return {
    ...(query.action === undefined ? {} : { action: query.action }),
    ...(query.actor_type === undefined ? {} : { actorType: query.actor_type }),
    ...(query.target_id === undefined ? {} : { targetId: query.target_id }),
    newestFirst: query.sort === '-occurred_at',
  };
}
const auditPage = jsonResponse('A page of audit events with its pagination envelope.', pageOf('audit_events', AuditEventSchema, 'in the order of `sort`'), {
  audit_events: [auditEvent],
  ...page(1),
}, { Link: LinkHeader });

/**
 * One workspace's audit trail: mounted in the operator API (oldest first by default) and, for
 * the scope `audit:read`, in the workspace's own (newest first by default), its own events only
 * (docs/api.md, "Self-service"). Source: docs/contract.md Part B, Retries, limits and audit.
 */
export async function workspaceAuditRoutes(app: FastifyInstance, options: { store: Store; mount: RouteMount }): Promise<void> {
  const { store, mount } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const path = `${mount.base}/audit-events`;
  // Both queries have the same fields; only the default of `sort` differs.
  const querystring = mount.side === 'operator' ? WorkspaceAuditQuery : (OwnAuditQuery as unknown as typeof WorkspaceAuditQuery);

  api.get(path, {
    schema: {
      operationId: mount.pick('listWorkspaceAuditEvents', 'listOwnAuditEvents'),
      summary: mount.pick("List a workspace's audit events, oldest first", "List the workspace's audit events, newest first"),
      description:
        'Every change made in the workspace (users, keys, its identity provider and webhook endpoints), with actor, request ' +
        'id, before and after; `action`, `actor_type` (e.g. `person`, `operator`) and `target_id` narrow it, `sort` orders it.',
      tags: mount.tags('audit'),
      security: mount.security('audit:read'),
      params: Type.Object(mount.params),
      querystring,
      response: {
        200: auditPage,
        ...problemResponses(...mount.errors, 'invalid_parameter'),
      },
    },
    handler: async (request, reply) => {
      const { page_number: pageNumber, page_size: pageSize, ...filters } = request.query;
      const page = await listAuditEvents(store, mount.subdomain(request), { pageNumber, pageSize }, auditFilter(filters));
      return listed(request, reply, 'audit_events', page, toWireAuditEvent);
    },
  });
  rejectOtherMethods(app, path, ['GET']);
}

/**
 * The operator's route of every audit event, of every workspace and of the catalogue (one
 * workspace's is {@link workspaceAuditRoutes}). Source: docs/contract.md Part B, Retries, limits and audit.
 */
export async function auditRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  const { store } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get('/audit-events', {
    schema: {
      operationId: 'listAuditEvents',
      summary: 'List every audit event, catalogue changes included, oldest first',
      description:
        'Every change of every workspace, and of the product catalogue; `workspace`, `action`, `actor_type` and `target_id` ' +
        'narrow it, `sort` orders it.',
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
