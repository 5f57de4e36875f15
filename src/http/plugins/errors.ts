import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../core/errors.ts';
import { sendProblem } from '../problem.ts';
import { toFieldErrors } from '../validation.ts';

/** Fastify's own error codes for body parsing, mapped to our stable codes (docs/contract.md Part B, Errors). */
function fromFramework(error: FastifyError): AppError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', 'Send the body as application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('bad_request', 'The Content-Length header does not match the body.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is larger than 64 KiB.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('malformed_json', 'The body is empty; send a JSON document.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('malformed_json', `The body is not valid JSON: ${error.message}`);
    default:
      break;
  }
  if (error instanceof SyntaxError || error.name === 'SyntaxError') {
    return new AppError('malformed_json', `The body is not valid JSON: ${error.message}`);
  }
  if (error.validation) {
    const errors = toFieldErrors(error.validation as never);
    if (error.validationContext === 'body') {
      return new AppError('validation_failed', 'The request body is invalid.', errors);
    }
    const names = errors.map((e) => e.field).join(', ');
    return new AppError('invalid_parameter', `Invalid ${error.validationContext ?? 'parameter'}: ${names}.`, errors);
  }
  return undefined;
}

/**
 * Turns anything thrown into an AppError: ours as they are, Fastify's parsing and validation
 * errors by code, other 4xx as `bad_request`, transient database failures (statement
 * timeout, full pool, unreachable server) as `503 service_unavailable` through
 * `mapStorageError` (the store's `mapError`), and everything else as a logged
 * `internal_error` whose detail reveals nothing.
 */
export function toAppError(error: unknown, request: FastifyRequest, mapStorageError: (error: unknown) => unknown): AppError {
  if (error instanceof AppError) return error;
  const fastifyError = error as FastifyError;
  const mapped = fromFramework(fastifyError);
  if (mapped) return mapped;
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new AppError('bad_request', fastifyError.message);
  }
  // Queries outside a transaction (reads, authentication) reach here unmapped.
  const fromDatabase = mapStorageError(error);
  if (fromDatabase instanceof AppError) {
    request.log.warn({ err: error }, 'database unavailable');
    return fromDatabase;
  }
  request.log.error({ err: error }, 'unhandled error');
  return new AppError('internal_error', 'An unexpected error occurred; the request id identifies it in our logs.');
}

/**
 * Fastify `frameworkErrors`: answers URLs the router rejects before any hook runs (a bad
 * percent-encoding, a path parameter longer than the router allows) as `400 bad_request`
 * problem+json with `X-Request-Id`, instead of Fastify's own JSON body. Source: docs/contract.md
 * Part B, Errors ("every error is application/problem+json", "every response carries X-Request-Id").
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const detail =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'A path segment of the URL is too long.'
      : error.code === 'FST_ERR_BAD_URL'
        ? 'The URL path is not validly percent-encoded.'
        : 'The request could not be routed.';
  reply.header('x-request-id', request.id);
  sendProblem(request, reply, new AppError('bad_request', detail));
}

/**
 * Installs the one error handler (RFC 9457 problem+json for every failure; storage failures
 * translated by `mapStorageError`) and the 404
 * handler for unknown paths (`not_found`). Source: docs/contract.md Part B, Errors; docs/architecture.md.
 */
export function registerErrorHandling(app: FastifyInstance, mapStorageError: (error: unknown) => unknown): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) =>
    sendProblem(request, reply, toAppError(error, request, mapStorageError)),
  );
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, new AppError('not_found', `No resource at ${request.method} ${request.url.split('?')[0]}.`)),
  );
}
