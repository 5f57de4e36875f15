import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listAllAuditEvents, listAuditEvents, type AuditPage } from '../../../core/audit/audit-service.ts';
import { AppError } from '../../../core/errors.ts';
import type { Store } from '../../../core/ports.ts';
import type { AuditFilter } from '../../../core/audit/audit-repository.ts';
import { cursorLinks, paginationLinks } from '../../link-header.ts';
import { ADMIN_EXAMPLES, AuditPageSchema, AuditQuery, OwnAuditQuery, WorkspaceAuditQuery, toWireAuditEvent } from '../../schemas/admin.ts';
import { jsonResponse, problemResponses, toWirePagination } from '../../schemas/common.ts';
import { AUTH, security, tags } from './admin-common.ts';
import type { RouteMount } from '../route-mount.ts';

const { auditEvent, page } = ADMIN_EXAMPLES;

/** The filters of an audit query (listing or export). */
interface AuditFilterQuery {
  action?: string;
  actor_type?: string;
  target_id?: string;
  since?: string;
  until?: string;
  sort?: string;
}

/** The audit filters and order of a query, as the domain takes them (the schema checked the instants). */
export function auditFilter(query: AuditFilterQuery): AuditFilter {
  return {
    ...(query.action === undefined ? {} : { action: query.action }),
    ...(query.actor_type === undefined ? {} : { actorType: query.actor_type }),
    ...(query.target_id === undefined ? {} : { targetId: query.target_id }),
    ...(query.since === undefined ? {} : { since: new Date(query.since) }),
    ...(query.until === undefined ? {} : { until: new Date(query.until) }),
    newestFirst: query.sort === '-occurred_at',
  };
}

/**
 * The cursor of a listing's query, if any.
 * @throws AppError `invalid_parameter` (400) when `page_number` is given with it: a page number counts from the listing's start, a cursor from an event.
 */
function cursorOf(request: FastifyRequest, startingAfter: number | undefined): number | undefined {
  if (startingAfter === undefined) return undefined;
  if (new URL(request.url, 'http://localhost').searchParams.has('page_number')) {
    throw new AppError('invalid_parameter', 'Parameter page_number cannot be given with starting_after.', [
      { field: 'page_number', message: 'cannot be given with starting_after' },
    ]);
  }
  return startingAfter;
}

/**
 * A listing's answer with `next_cursor`: by page number, its envelope and page-number links
 * (docs/contract.md Part B, Listing); by cursor, no count and cursor links.
 */
function auditListed<T extends Parameters<typeof toWireAuditEvent>[0]>(request: FastifyRequest, reply: FastifyReply, listing: AuditPage<T>) {
  const { pagination, nextCursor } = listing;
  reply.header('link', pagination ? paginationLinks(request, pagination) : cursorLinks(request, nextCursor));
  return { audit_events: listing.items.map(toWireAuditEvent), ...(pagination ? toWirePagination(pagination) : {}), next_cursor: nextCursor };
}

const auditPage = jsonResponse('A page of audit events with its pagination envelope and the cursor of the next page.', AuditPageSchema('in the order of `sort`'), {
  audit_events: [auditEvent],
  ...page(1),
  next_cursor: null,
}, {
  Link: {
    type: 'string',
    description: 'RFC 8288 links: by page number, `first`, `prev`, `next` and `last`; read by cursor (`starting_after`), `first` and `next` (absent at the end).',
  },
});

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
        'id, before and after; `action`, `actor_type` (e.g. `person`, `operator`), `target_id`, `since` and `until` narrow it, ' +
        '`sort` orders it. Read it by page number, or by cursor: pass `next_cursor` as `starting_after` (rows written meanwhile ' +
        'neither shift nor repeat the pages).',
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
      const { page_number: pageNumber, page_size: pageSize, starting_after: startingAfter, ...filters } = request.query;
      const cursor = cursorOf(request, startingAfter);
      const listing = await listAuditEvents(store, mount.subdomain(request), { pageNumber, pageSize }, auditFilter(filters), cursor);
      return auditListed(request, reply, listing);
    },
  });
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
        'Every change of every workspace, and of the product catalogue; `workspace`, `action`, `actor_type`, `target_id`, ' +
        '`since` and `until` narrow it, `sort` orders it; by page number or by cursor (`starting_after`).',
      tags,
      security,
      querystring: AuditQuery,
      response: { 200: auditPage, ...problemResponses(...AUTH, 'invalid_parameter') },
    },
    handler: async (request, reply) => {
      const { page_number: pageNumber, page_size: pageSize, starting_after: startingAfter, workspace, ...filters } = request.query;
      const cursor = cursorOf(request, startingAfter);
      const filter = { ...auditFilter(filters), ...(workspace === undefined ? {} : { workspace }) };
      const listing = await listAllAuditEvents(store, { pageNumber, pageSize }, filter, cursor);
      return auditListed(request, reply, listing);
    },
  });
}
