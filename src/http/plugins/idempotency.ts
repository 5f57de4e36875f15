import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import stringify from 'safe-stable-stringify';
import { AppError, databaseUnavailable } from '../../core/errors.ts';
import type { IdempotencyOutcome, IdempotencyStore } from '../../core/idempotency/idempotency-store.ts';
import type { RequestTransaction } from '../../core/idempotency/request-transaction.ts';
import { PROBLEM_CONTENT_TYPE, toProblem } from '../problem.ts';
import { addRouteHook } from '../hooks.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route honours `Idempotency-Key` (docs/contract.md Part B, Retries). */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    /** The idempotency key this request claimed, to store its response. */
    idempotencyKey?: string;
    /** The transaction holding this request's claim and its changes (PostgreSQL), until it answers. */
    requestTransaction?: RequestTransaction;
  }
}

/** Longest accepted key (docs/contract.md Part B). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** A claim older than this with no response is considered abandoned (crashed process). */
const LOCK_SECONDS = 60;
/** Response headers replayed with the stored body. */
const REPLAYED_HEADERS = ['content-type', 'location', 'etag'];

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

/** Headers of a success that must not go out with the 503 that replaces it. */
const SUCCESS_HEADERS = ['location', 'etag', 'content-location'];

/**
 * Stripe-style idempotency keys on routes marked `config.idempotent`: the first response
 * (any status below 500) is stored per workspace and key for 24 h and replayed, with
 * `Idempotent-Replayed: true`, to a retry of the same request; the same key on another
 * request → `422 idempotency_key_reused`; while the first runs → `409 idempotency_key_in_use`.
 * Runs after validation, so a request rejected as invalid claims no key.
 *
 * With `beginTransaction` (PostgreSQL), the claim, everything the request changes and its
 * stored answer are one transaction, committed before the answer is sent: a request cut off by
 * a failover leaves either all of it (a retry replays the answer) or nothing (a retry runs
 * afresh), never a change without its answer or a claim that makes retries wait. A success
 * whose commit fails is answered `503 database_unavailable` instead. Without it (PGlite) the
 * claim is committed first and the answer stored after the change, as Stripe describes.
 * Source: docs/contract.md Part B, "Retries, limits and audit" and "A highly available database".
 */
export function registerIdempotency(
  app: FastifyInstance,
  store: IdempotencyStore,
  beginTransaction?: () => Promise<RequestTransaction>,
): void {
  // Declared up front so every request object has the same shape (Fastify, "Decorators").
  app.decorateRequest('idempotencyKey', undefined);
  app.decorateRequest('requestTransaction', undefined);

  /** Claims the key inside a new request transaction; ends the transaction unless the request runs. */
  const claimInTransaction = async (
    workspaceId: number,
    key: string,
    print: string,
  ): Promise<{ outcome: IdempotencyOutcome; tx?: RequestTransaction }> => {
    const tx = await beginTransaction!();
    try {
      const outcome = await tx.run(async (): Promise<IdempotencyOutcome> => {
        if (!(await store.tryLock(workspaceId, key))) return { state: 'in_flight' };
        return store.begin(workspaceId, key, print, LOCK_SECONDS);
      });
      if (outcome.state === 'started') return { outcome, tx };
      await tx.rollback();
      return { outcome };
    } catch (error) {
      await tx.rollback();
      throw error;
    }
  };

  const claim = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.tenant) return;
    const key = headerKey(request);
    if (key === undefined) return;
    const workspaceId = request.tenant.workspace.id;
    const print = fingerprint(request);
    const { outcome, tx } = beginTransaction
      ? await claimInTransaction(workspaceId, key, print)
      : { outcome: await store.begin(workspaceId, key, print, LOCK_SECONDS), tx: undefined };
    switch (outcome.state) {
      case 'started':
        request.idempotencyKey = key;
        request.requestTransaction = tx;
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

  const storedResponse = (reply: FastifyReply, payload: unknown) => {
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    return { status: reply.statusCode, headers, body: typeof payload === 'string' ? payload : '' };
  };

  /** Stores the answer and commits, in one round trip; a success that did not commit becomes a 503. */
  const recordInTransaction = async (request: FastifyRequest, reply: FastifyReply, payload: unknown, tx: RequestTransaction, key: string) => {
    if (reply.statusCode >= 500) {
      await tx.rollback();
      return payload;
    }
    try {
      await tx.commit(store.completion(request.tenant!.workspace.id, key, storedResponse(reply, payload)));
      return payload;
    } catch (err) {
      // A 4xx changed nothing and stays true; a success that may not have committed must not be
      // reported: the client retries (with this key it replays what did commit, or runs afresh).
      if (reply.statusCode >= 400) return payload;
      request.log.warn({ err }, 'the request transaction did not commit');
      const problem = databaseUnavailable();
      for (const name of SUCCESS_HEADERS) reply.removeHeader(name);
      reply.headers(problem.headers ?? {}).code(problem.status).type(PROBLEM_CONTENT_TYPE);
      return JSON.stringify(toProblem(problem, request.id));
    }
  };

  const record = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const key = request.idempotencyKey;
    if (key === undefined || !request.tenant) return payload;
    request.idempotencyKey = undefined;
    const tx = request.requestTransaction;
    request.requestTransaction = undefined;
    if (tx) return recordInTransaction(request, reply, payload, tx, key);
    const workspaceId = request.tenant.workspace.id;
    // The request's own work is committed (or failed) by now: a failure to record its outcome
    // must not replace the answer. The claim then lapses after LOCK_SECONDS and a retry runs.
    try {
      if (reply.statusCode >= 500) {
        await store.release(workspaceId, key);
        return payload;
      }
      await store.complete(workspaceId, key, storedResponse(reply, payload));
    } catch (err) {
      request.log.warn({ err }, 'could not record the idempotent response');
    }
    return payload;
  };

  /** A request that ended without answering (an aborted connection) must not keep its transaction open. */
  const abandon = async (request: FastifyRequest) => {
    const tx = request.requestTransaction;
    request.requestTransaction = undefined;
    await tx?.rollback();
  };

  // Only the routes that honour the header pay for these hooks.
  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    addRouteHook(route, 'preHandler', claim);
    addRouteHook(route, 'onSend', record);
    if (!beginTransaction) return;
    addRouteHook(route, 'onResponse', abandon);
    // The handler runs inside the request's transaction: every statement it makes joins it.
    const handler = route.handler;
    route.handler = function (this: FastifyInstance, request, reply) {
      const tx = request.requestTransaction;
      return tx ? tx.run(() => handler.call(this, request, reply)) : handler.call(this, request, reply);
    };
  });
}
