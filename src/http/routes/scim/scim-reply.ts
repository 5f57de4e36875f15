import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../../../core/actor.ts';
import { keyActor } from '../../../core/api-keys/authenticate.ts';
import { SCIM_CONTENT_TYPE, SCIM_PREFIX } from '../../../scim/constants.ts';
import { tenantOf } from '../../plugins/tenant.ts';

/** The absolute SCIM base of the request's workspace (`https://acme.example.com/scim/v2`), for `meta.location`. */
export function scimBaseUrl(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}${SCIM_PREFIX}`;
}

/** The actor of a SCIM change: the API key that made it, as `scim` (docs/contract.md Part B). */
export function scimActor(request: FastifyRequest): Actor {
  return keyActor(tenantOf(request), 'scim', request.id);
}

/** The workspace id of an authenticated SCIM request. */
export function workspaceOf(request: FastifyRequest): number {
  return tenantOf(request).workspace.id;
}

/** Sends a SCIM JSON body (`application/scim+json`, RFC 7644 §3.1). */
export function sendScim(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type(SCIM_CONTENT_TYPE).send(JSON.stringify(body));
}

/** The query string as parsed, for the SCIM readers. */
export function queryOf(request: FastifyRequest): Record<string, unknown> {
  return (request.query ?? {}) as Record<string, unknown>;
}
