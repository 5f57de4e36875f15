import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { routeOf } from './log-serializers.ts';

/** True when `log` writes `debug` lines (pino's check; Fastify's silent logger has none, and writes nothing). */
const atDebug = (log: FastifyBaseLogger) => (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('debug') ?? false;

/** The message of the one line each answered request logs (the one Fastify's own used). */
export const REQUEST_COMPLETED = 'request completed';

/** A request's line: method, route pattern, status and time to answer in ms (tenths). */
function requestLine(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
  const line = {
    method: request.method,
    route: routeOf(request),
    statusCode: reply.statusCode,
    responseTime: Math.round(reply.elapsedTime * 10) / 10,
  };
  return atDebug(request.log) ? { ...line, req: request } : line;
}

/**
 * How Fastify logs requests (its `logController` option, Fastify "Logging"): one line per
 * request (docs/operations.md, "Logs") in place of Fastify's pair with the whole request and
 * reply. At `info`, when the answer is sent: the method, the route pattern (never the URL:
 * log-serializers.ts), the status and the time to answer, beside the request id pino adds
 * (`reqId`); at `error` with the error instead when the response failed on its way. At `debug`
 * that line also carries the request as the `req` serializer shows it (host, client address),
 * and a line `incoming request` marks its arrival, so that a request that never completes can
 * be told from one that never came. A route not found says nothing of its own: its line names
 * it `unmatched` (and never its URL, where a key may sit in the query).
 */
export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (atDebug(request.log)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ ...requestLine(request, reply), err: error }, 'request errored');
    else reply.log.info(requestLine(request, reply), REQUEST_COMPLETED);
  }

  override routeNotFound(): void {}
}
