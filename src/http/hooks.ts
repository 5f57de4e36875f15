import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import { isPending, type Awaitable } from '../core/awaitable.ts';

/** A Fastify hook in callback style: `(request, reply, done)`. */
export type CallbackHook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void;

/** A synchronous step of a request: may set reply headers; throws (an `AppError`) to refuse the request. */
export type RequestCheck = (request: FastifyRequest, reply: FastifyReply) => void;

/**
 * Turns a step that answers at once most of the time, and waits (returns a promise) only
 * sometimes, into a callback-style Fastify hook: what it throws or rejects with (an
 * `AppError`) goes to the error handler, as from an async hook, but a step that answers at
 * once spends no promise and no microtask. Source: Fastify "Hooks" (callback style).
 */
export function awaitableHook(step: (request: FastifyRequest, reply: FastifyReply) => Awaitable<void>): CallbackHook {
  return (request, reply, done) => {
    let pending: Awaitable<void>;
    try {
      pending = step(request, reply);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (isPending(pending)) pending.then(() => done(), done);
    else done();
  };
}

/**
 * Turns synchronous checks into one callback-style Fastify hook ({@link awaitableHook}) that
 * runs them in order and stops at the first that throws: no promise and no microtask is spent
 * on the many requests that pass, and several checks cost Fastify one hook step, not one each.
 */
export function syncHook(...checks: RequestCheck[]): CallbackHook {
  return awaitableHook((request, reply) => {
    for (const check of checks) check(request, reply);
  });
}

/**
 * Appends `hook` to the route's own hooks of `name` (after the instance's hooks), for use in an
 * `onRoute` hook: so that a hook only some routes need costs the others nothing.
 */
export function addRouteHook(
  route: RouteOptions,
  name: 'onRequest' | 'preHandler' | 'onSend' | 'onResponse',
  hook: (request: FastifyRequest, reply: FastifyReply, ...rest: never[]) => unknown,
): void {
  const hooks = route as unknown as Record<string, unknown>;
  const existing = hooks[name];
  hooks[name] = existing === undefined ? [hook] : [...(Array.isArray(existing) ? (existing as unknown[]) : [existing]), hook];
}
