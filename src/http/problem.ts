import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { isScimPath, SCIM_CONTENT_TYPE } from '../scim/constants.ts';
import { toScimError } from '../scim/errors.ts';

/** Media type of every error response (RFC 9457 §3). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/**
 * RFC 9457 problem details as wum renders them: the standard members plus `code` (the
 * stable identifier of docs/contract.md), `request_id`, and `errors` for invalid fields.
 */
export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: string;
  readonly request_id: string;
  readonly errors?: readonly { field: string; message: string }[];
}

/** The problem type URI of a code: a URN, stable and not tied to any host (RFC 9457 §3.1.1). */
export function problemType(code: string): string {
  return `urn:wum:problem:${code}`;
}

/** Renders an AppError as problem details for `request`. */
export function toProblem(error: AppError, requestId: string): ProblemDetails {
  return {
    type: problemType(error.code),
    title: error.title,
    status: error.status,
    detail: error.detail,
    code: error.code,
    request_id: requestId,
    ...(error.errors && error.errors.length > 0 ? { errors: error.errors } : {}),
  };
}

/**
 * Sends an AppError as an RFC 9457 response, with the error's extra headers; on the SCIM
 * service's paths as a SCIM error instead (docs/contract.md Part B, SCIM 2.0 provisioning), with
 * `WWW-Authenticate: Bearer` on 401 (RFC 6750 §3).
 */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  if (isScimPath(request.url.split('?', 1)[0] ?? '')) {
    const { status, body } = toScimError(error);
    if (status === 401) reply.header('www-authenticate', 'Bearer realm="wum"');
    return reply.code(status).type(SCIM_CONTENT_TYPE).send(JSON.stringify(body));
  }
  return reply.code(error.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(toProblem(error, request.id)));
}
