/**
 * When and how long the SDK waits before it tries a call again.
 *
 * - `429` and `503` are answered before anything is applied (rate limit, load shedding,
 *   shutdown, a database that does not answer), so every call retries them.
 * - `409 idempotency_key_in_use` means a first attempt with the same `Idempotency-Key` is
 *   still running; waiting for it is safe, and the retry gets its stored response.
 * - A network failure or a timeout may come after the server applied the call. Only a call
 *   that is safe to repeat (a read, an idempotent-by-contract call, or one carrying an
 *   `Idempotency-Key`) retries it; any other call fails at once with `network_error`/`timeout`.
 *
 * Waits use exponential backoff with full jitter (a random delay up to
 * `min(maxDelayMs, baseDelayMs * 2^retry)`), and never less than the response's `Retry-After`.
 * Attempts and total time are bounded: a retry whose wait would pass `maxElapsedMs` is not made,
 * and a server that cannot be reached is given fewer attempts (`maxNetworkAttempts`) than one
 * that asks to be called back later, so a wrong address or a stopped server fails fast.
 */
export interface RetryOptions {
  /** Attempts in all, the first included. Default 5; 1 turns retries off. */
  readonly maxAttempts?: number;
  /** Attempts in all when they fail without a response (network failure, timeout). Default 3, at most `maxAttempts`. */
  readonly maxNetworkAttempts?: number;
  /** Ceiling of the first backoff, in ms. Default 250. */
  readonly baseDelayMs?: number;
  /** Largest backoff ceiling, in ms. Default 10 000. */
  readonly maxDelayMs?: number;
  /** Time budget of one call, its attempts and waits included, in ms. Default 60 000. */
  readonly maxElapsedMs?: number;
  /** Waits `ms` milliseconds (injectable for tests). Default: a timer. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** A number in [0, 1) for the jitter (injectable for tests). Default: Math.random. */
  readonly random?: () => number;
  /** The current time in ms (injectable for tests). Default: Date.now. */
  readonly now?: () => number;
  /** Called before each wait, e.g. to log retries. */
  readonly onRetry?: (event: RetryEvent) => void;
}

/** One retry about to happen. */
export interface RetryEvent {
  /** The call, e.g. `POST http://acme.localhost:3000/api/external/v2/users`. */
  readonly operation: string;
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** Why: the status and code (`429 rate_limited`), or `network_error`/`timeout`. */
  readonly reason: string;
  /** How long the SDK waits before the next attempt, in ms. */
  readonly delayMs: number;
}

/** {@link RetryOptions} with every default applied. */
export type RetryPolicy = Required<Omit<RetryOptions, 'onRetry'>> & Pick<RetryOptions, 'onRetry'>;

/** Resolves options (or `false`, no retries) into a policy. */
export function retryPolicy(options: RetryOptions | false | undefined): RetryPolicy {
  const given = options === false ? { maxAttempts: 1 } : (options ?? {});
  const maxAttempts = Math.max(1, Math.floor(given.maxAttempts ?? 5));
  return {
    maxAttempts,
    maxNetworkAttempts: Math.min(maxAttempts, Math.max(1, Math.floor(given.maxNetworkAttempts ?? 3))),
    baseDelayMs: given.baseDelayMs ?? 250,
    maxDelayMs: given.maxDelayMs ?? 10_000,
    maxElapsedMs: given.maxElapsedMs ?? 60_000,
    sleep: given.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    random: given.random ?? Math.random,
    now: given.now ?? Date.now,
    onRetry: given.onRetry,
  };
}

/**
 * The wait before retry number `retry` (1 for the first retry): full jitter over the
 * exponential ceiling, and at least `retryAfterMs` when the server asked for it.
 */
export function retryDelay(policy: RetryPolicy, retry: number, retryAfterMs?: number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  const jittered = Math.floor(policy.random() * ceiling);
  return Math.max(jittered, retryAfterMs ?? 0);
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) in seconds: delay-seconds, or an HTTP date relative to `now`.
 * Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
