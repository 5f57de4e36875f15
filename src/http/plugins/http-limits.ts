import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { HttpLimits } from '../../config/load-config.ts';
import { AppError, type ErrorCode } from '../../core/errors.ts';
import { PROBLEM_CONTENT_TYPE, sendProblem, toProblem } from '../problem.ts';
import type { RequestCheck } from '../hooks.ts';
import { BASELINE_SECURITY_HEADERS } from './security-headers.ts';

/** How often Node checks open requests against `headersTimeout` / `requestTimeout` (its default is 30 s). */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

/**
 * The Fastify server options that bound what one connection may cost: request, header,
 * idle and keep-alive timeouts and the header size (Node's `maxHeaderSize` covers the
 * request line too, so it also caps the URL). Passed to `Fastify()` by `buildApp`.
 * Source: docs/operations.md, "Limits"; Node `http.createServer` options.
 */
export function serverLimitOptions(
  limits: HttpLimits,
): Pick<FastifyServerOptions, 'requestTimeout' | 'connectionTimeout' | 'keepAliveTimeout' | 'clientErrorHandler'> & {
  http: ServerOptions;
} {
  return {
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: limits.connectionTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: {
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.headersTimeoutMs,
      // Fastify sets requestTimeout on the server after creating it; Node validates
      // headersTimeout against this one at creation.
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    clientErrorHandler: answerClientError,
  };
}

/** What Node's parser refused, as one of our codes. */
function clientErrorCode(error: NodeJS.ErrnoException): { code: ErrorCode; detail: string } {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'request_timeout', detail: 'The request was not received in time.' };
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'request_header_fields_too_large', detail: 'The request line and headers are too large.' };
    default:
      return { code: 'bad_request', detail: 'The request is not valid HTTP.' };
  }
}

/**
 * Fastify `clientErrorHandler`: answers a request Node's HTTP parser refused (headers too
 * large → 431, headers or body too slow → 408, malformed → 400) with problem+json, an
 * `X-Request-Id` and the baseline security headers, then closes the connection. No hook
 * runs for these: there is no request object yet.
 */
export function answerClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const { code, detail } = clientErrorCode(error);
  const requestId = randomUUID();
  const problem = new AppError(code, detail);
  const body = JSON.stringify(toProblem(problem, requestId));
  this.log.debug({ err: error, reqId: requestId }, `refused by the HTTP parser: ${code}`);
  if (socket.writable) {
    const headers = {
      'content-type': PROBLEM_CONTENT_TYPE,
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
      'x-request-id': requestId,
      ...BASELINE_SECURITY_HEADERS,
    };
    const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.write(`HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n${head}\r\n${body}`);
  }
  socket.destroy(error);
}

function uriTooLong(maxUrlLength: number): AppError {
  return new AppError('uri_too_long', `The request target is longer than ${maxUrlLength} characters.`);
}

/**
 * Refuses a request whose target (path and query) is longer than `maxUrlLength` with
 * `414 uri_too_long`, before the workspace, key or anything else is looked at.
 */
export function urlLengthLimit(maxUrlLength: number): RequestCheck {
  return (request) => {
    if (request.url.length > maxUrlLength) throw uriTooLong(maxUrlLength);
  };
}

/**
 * Wraps Fastify's `frameworkErrors` handler (URLs the router refuses before any hook runs):
 * the baseline security headers go on those answers too, and an over-long URL is
 * `414 uri_too_long` there as well, not a `400` about a path segment.
 */
export function withUrlLengthLimit(
  maxUrlLength: number,
  handler: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void,
): (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => void {
  return (error, request, reply) => {
    reply.headers(BASELINE_SECURITY_HEADERS);
    if (request.url.length <= maxUrlLength) return handler(error, request, reply);
    reply.header('x-request-id', request.id);
    sendProblem(request, reply, uriTooLong(maxUrlLength));
  };
}

/**
 * A host as the `Host` (or, behind a trusted proxy, `X-Forwarded-Host`) header may carry it:
 * a name of letters, digits, `-`, `_` and dots, or an IPv4 address, or a bracketed IPv6
 * address, with an optional port (RFC 9110 §7.2, RFC 3986 §3.2.2, without the exotic
 * sub-delimiters no DNS name or URL parser accepts).
 */
const VALID_HOST = /^(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * Refuses a request whose effective host is not a valid host with `400 bad_request`
 * (RFC 9112 §3.2: "a Host header field with an invalid field value" → 400), before anything
 * builds a URL from it (pagination links) or looks a workspace up by it.
 */
export const refuseInvalidHost: RequestCheck = (request) => {
  const host = request.host;
  if (host !== undefined && host !== '' && !VALID_HOST.test(host)) {
    throw new AppError('bad_request', 'The Host header is not a valid host name.');
  }
};

