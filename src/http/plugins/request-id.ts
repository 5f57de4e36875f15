import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestCheck } from '../hooks.ts';

/** What we accept as a caller's request id: short, printable, no spaces (log-safe). */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * Fastify `genReqId`: echoes a sane incoming `X-Request-Id`, else generates a UUID v4.
 * Source: docs/contract.md Part B, Errors ("echoing a sane incoming one, else generated").
 */
export function generateRequestId(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/**
 * Puts `X-Request-Id` on every response, errors and 404s included: the first of the checks
 * every request passes (app.ts).
 */
export const setRequestIdHeader: RequestCheck = (request, reply) => {
  reply.header('x-request-id', request.id);
};
