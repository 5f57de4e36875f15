import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import stringify from 'safe-stable-stringify';
import { AppError } from '../../core/errors.ts';
import type { IdempotencyStore } from '../../storage/idempotency.queries.ts';
import { addRouteHook } from '../hooks.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route honours `Idempotency-Key` (SPEC.md Part B, Retries). */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    /** The idempotency key this request claimed, to store its response. */
    idempotencyKey?: string;
  }
}

/** Longest accepted key (SPEC.md Part B). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** A claim older than this with no response is considered abandoned (crashed process). */
const LOCK_SECONDS = 60;
/** Response headers replayed with the stored body. */
const REPLAYED_HEADERS = ['content-type', 'location'];
const PURGE_EVERY_MS = 10 * 60_000;

/** Same route, same path parameters, same body (key order ignored) → same fingerprint. */
function fingerprint(request: FastifyRequest): string {
  const identity = stringify({
    method: request.method,
    route: request.routeOptions.url,
    params: request.params,
    body: request.body ?? null,
  });
  return createHash('sha256').update(identity ?? '').digest('hex');
}

function headerKey(request: FastifyRequest): string | undefined {
  const value = request.headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new AppError('invalid_parameter', 'Idempotency-Key must be given once, 1-255 characters.', [
      { field: 'Idempotency-Key', message: 'must be 1-255 characters' },
    ]);
  }
  return value;
}

/**
 * Stripe-style idempotency keys on routes marked `config.idempotent`: the first response
 * (any status below 500) is stored per workspace and key for 24 h and replayed, with
 * `Idempotent-Replayed: true`, to a retry of the same request; the same key on another
 * request → `422 idempotency_key_reused`; while the first runs → `409 idempotency_key_in_use`.
 * Runs after validation, so a request rejected as invalid claims no key.
 */
export function registerIdempotency(app: FastifyInstance, store: IdempotencyStore): void {
  let lastPurge = 0;

  const claim = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.tenant) return;
    const key = headerKey(request);
    if (key === undefined) return;
    const workspaceId = request.tenant.workspace.id;
    if (Date.now() - lastPurge > PURGE_EVERY_MS) {
      lastPurge = Date.now();
      store.purgeExpired().catch((err) => request.log.warn({ err }, 'idempotency purge failed'));
    }
    const outcome = await store.begin(workspaceId, key, fingerprint(request), LOCK_SECONDS);
    switch (outcome.state) {
      case 'started':
        request.idempotencyKey = key;
        return;
      case 'mismatch':
        throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different request.');
      case 'in_flight':
        throw new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed.', undefined, {
          'retry-after': '1',
        });
      case 'replay':
        reply.headers(outcome.response.headers).header('idempotent-replayed', 'true').code(outcome.response.status);
        return reply.send(outcome.response.body || undefined);
    }
  };

  const record = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const key = request.idempotencyKey;
    if (key === undefined || !request.tenant) return payload;
    request.idempotencyKey = undefined;
    const workspaceId = request.tenant.workspace.id;
    // The request's own work is committed (or failed) by now: a failure to record its outcome
    // must not replace the answer. The claim then lapses after LOCK_SECONDS and a retry runs.
    try {
      if (reply.statusCode >= 500) {
        await store.release(workspaceId, key);
        return payload;
      }
      const headers: Record<string, string> = {};
      for (const name of REPLAYED_HEADERS) {
        const value = reply.getHeader(name);
        if (value !== undefined) headers[name] = String(value);
      }
      await store.complete(workspaceId, key, {
        status: reply.statusCode,
        headers,
        body: typeof payload === 'string' ? payload : '',
      });
    } catch (err) {
      request.log.warn({ err }, 'could not record the idempotent response');
    }
    return payload;
  };

  // Only the routes that honour the header pay for these hooks.
  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    addRouteHook(route, 'preHandler', claim);
    addRouteHook(route, 'onSend', record);
  });
}
