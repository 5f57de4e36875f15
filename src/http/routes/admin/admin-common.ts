import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Actor } from '../../../core/actor.ts';
import type { Page } from '../../../core/pagination.ts';
import { paginationLinks } from '../../link-header.ts';
import { toWirePagination } from '../../schemas/common.ts';

/**
 * The actor of an operator's change, for the audit trail: the operator who signed in to the
 * console (`oidc:<sub>`, their email), else the admin token's automation (`operator`).
 */
export const adminActor = (request: FastifyRequest): Actor =>
  request.operatorSession
    ? { ...request.operatorSession.actor, requestId: request.id }
    : { type: 'operator', id: null, label: 'operator', requestId: request.id };
/** Path parameter: a workspace's subdomain. */
export const Subdomain = Type.String({ description: 'The workspace\'s subdomain (case-insensitive).', examples: ['acme'] });
/** Path parameters naming a workspace. */
export const SubdomainParams = Type.Object({ subdomain: Subdomain });
/** OpenAPI tags of every operator route. */
export const tags = ['admin'];
/** OpenAPI security requirement of every operator route. */
export const security = [{ adminToken: [] }];
/** Errors every admin route can answer (besides the transport's, which the document adds to every route): the path on a workspace's host (404), the token or the operator's console session and its failed-attempt limit, the service's own failures. */
export const AUTH = ['not_found', 'invalid_admin_token', 'invalid_session', 'cross_origin_refused', 'rate_limited', 'internal_error', 'service_unavailable', 'database_unavailable'] as const;

/**
 * A page of `T` on the wire, `{ [key]: items, pagination, total_count }`, with its `Link`
 * header set (docs/contract.md Part B, Listing).
 */
export function listed<T, W>(request: FastifyRequest, reply: FastifyReply, key: string, page: Page<T>, map: (t: T) => W) {
  reply.header('link', paginationLinks(request, page.pagination));
  return { [key]: page.items.map(map), ...toWirePagination(page.pagination) };
}
