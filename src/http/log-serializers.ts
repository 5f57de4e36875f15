import type { FastifyRequest } from 'fastify';

/*
 * What the server log may hold about a request or an error. A request is logged by its route
 * pattern (`/api/external/v2/users/:email`), never its URL: a key or token a client puts in a
 * query string, or an email in a path, stays out of the log. A database error is logged
 * without the values bound to its statement (drizzle puts them in `params` and in its message;
 * PostgreSQL repeats them in `detail`). See docs/security.md, "What the logs hold".
 */

/** Error properties that carry the values of a statement, never logged. */
const VALUE_PROPERTIES = new Set(['params', 'parameters', 'detail', 'where', 'hint', 'input', 'data']);
/** drizzle's `params: …` part of a failed query's message, up to the stack. */
const PARAMS_TEXT = /\nparams: [\s\S]*?(?=\n\s+at |$)/;
/** How deep a chain of `cause`s is followed. */
const MAX_CAUSES = 5;

function withoutValues(text: unknown): unknown {
  return typeof text === 'string' ? text.replace(PARAMS_TEXT, '\nparams: [not logged]') : text;
}

/**
 * An error as the log shows it: type, message and stack (with a failed query's parameters cut
 * out), its scalar properties (code, severity, routine, …) except those that carry statement
 * values, and its causes likewise.
 */
export function serializeError(error: unknown, depth = 0): Record<string, unknown> {
  if (!(error instanceof Error)) return { type: typeof error, message: String(withoutValues(String(error))) };
  const out: Record<string, unknown> = {
    type: error.constructor?.name ?? 'Error',
    message: withoutValues(error.message),
    stack: withoutValues(error.stack),
  };
  for (const [key, value] of Object.entries(error)) {
    if (VALUE_PROPERTIES.has(key) || key === 'cause' || key === 'message' || key === 'stack') continue;
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) out[key] = withoutValues(value);
  }
  if (error.cause !== undefined && depth < MAX_CAUSES) out.cause = serializeError(error.cause, depth + 1);
  return out;
}

/** The route pattern a request matched (`/api/external/v2/users/:email`), or `unmatched`: what the log names it by. */
export const routeOf = (request: FastifyRequest): string => request.routeOptions?.url ?? 'unmatched';

/** A request as the log shows it: method, route pattern (or `unmatched`), host and client address. */
export function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    route: routeOf(request),
    host: request.hostname,
    remoteAddress: request.ip,
  };
}

/** The pino serializers of the server log (`req`, `err`), for Fastify's `logger` option. */
export const LOG_SERIALIZERS = { req: serializeRequest, err: serializeError } as const;
