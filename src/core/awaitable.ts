/*
 * Steps that answer from memory most of the time and from a database or Redis otherwise.
 * Chained with `await`, every step costs a promise and a microtask even when its value is
 * already there; chained with these, a step whose value is ready runs at once, and only a
 * step that really waits makes the rest asynchronous. (A few lines, so no library: none
 * of the registry's does just this.) See docs/performance.md, "The fixed cost of a request".
 */

/** A value now, or a promise of it later. */
export type Awaitable<T> = T | Promise<T>;

/** True for a promise (or any thenable), false for a value that is already there. */
export function isPending<T>(value: Awaitable<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/** `next(value)`: at once when `value` is there, else once it resolves (a rejection passes through). */
export function andThen<T, R>(value: Awaitable<T>, next: (value: T) => Awaitable<R>): Awaitable<R> {
  return isPending(value) ? value.then(next) : next(value);
}

/**
 * `run()`, with `recover(error)` answering in its place when it throws or its promise
 * rejects: the `try`/`catch` of a step that may or may not wait.
 */
export function orElse<T>(run: () => Awaitable<T>, recover: (error: unknown) => Awaitable<T>): Awaitable<T> {
  let value: Awaitable<T>;
  try {
    value = run();
  } catch (error) {
    return recover(error);
  }
  return isPending(value) ? value.catch(recover) : value;
}
