import { errorFromFailure, errorFromResponse, WumApiError } from './errors.ts';
import { parseRetryAfter, retryDelay, type RetryPolicy } from './retry.ts';

/*
 * The SDK's retry loop around one API call, shared by the Node clients (transport.ts) and the
 * web console: it imports nothing from Node, so a browser bundle can take it.
 */

/** What an openapi-fetch call resolves to. */
export interface Outcome {
  readonly data?: unknown;
  readonly error?: unknown;
  readonly response: Response;
}

/** How one call may be retried. */
export interface CallOptions {
  /**
   * The call may be sent again after a network failure or timeout: it is a read, idempotent
   * by contract, or carries an `Idempotency-Key`. 429 and 503 are retried for every call.
   */
  readonly replayable: boolean;
  /** Cancels the call (and its retries) when it fires: the call fails with code `aborted`. */
  readonly signal?: AbortSignal;
}

/** Whether a failed attempt may be tried again (see `RetryOptions` for the rules). */
function isRetryable(error: WumApiError, options: CallOptions): boolean {
  if (error.isNetworkError) return options.replayable;
  if (error.status === 429 || error.status === 503) return true;
  return error.status === 409 && error.code === 'idempotency_key_in_use';
}

/**
 * Runs `attempt` (one openapi-fetch call, given the abort signal of its timeout, joined with
 * the caller's) until it succeeds or `policy` gives up: 429 and 503 after their `Retry-After`,
 * network failures and timeouts only for a replayable call, with exponential backoff and full
 * jitter, bounded in attempts and elapsed time.
 * @param label - method and URL for error messages, e.g. `GET http://acme.localhost:3000/api/external/v2/users`.
 * @param timeoutMs - time one attempt may take, in ms.
 * @returns the parsed body and the response of the successful attempt.
 * @throws WumApiError for an error response; `status` 0 and `code` `network_error` or
 *   `timeout` when no response arrived, `aborted` when the caller's signal fired.
 */
export async function callWithRetries<T extends Outcome>(
  label: string,
  policy: RetryPolicy,
  timeoutMs: number,
  options: CallOptions,
  attempt: (signal: AbortSignal) => Promise<T>,
): Promise<{ data: NonNullable<T['data']> | undefined; response: Response }> {
  const started = policy.now();
  for (let number = 1; ; number += 1) {
    let outcome: T | undefined;
    let failure: unknown;
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      outcome = await attempt(options.signal ? AbortSignal.any([options.signal, timeout]) : timeout);
    } catch (error) {
      failure = error;
    }
    if (outcome?.response.ok) {
      return { data: outcome.data as NonNullable<T['data']> | undefined, response: outcome.response };
    }
    if (!outcome && options.signal?.aborted) {
      throw new WumApiError({ status: 0, code: 'aborted', detail: 'Cancelled.', operation: label, cause: failure });
    }
    const retryAfterSeconds = outcome ? parseRetryAfter(outcome.response.headers.get('retry-after'), policy.now()) : undefined;
    const error = outcome
      ? errorFromResponse(label, outcome.response, outcome.error, retryAfterSeconds)
      : errorFromFailure(label, failure, timeoutMs);
    const attempts = error.isNetworkError ? policy.maxNetworkAttempts : policy.maxAttempts;
    if (number < attempts && isRetryable(error, options)) {
      const delayMs = retryDelay(policy, number, retryAfterSeconds === undefined ? undefined : retryAfterSeconds * 1000);
      if (policy.now() - started + delayMs <= policy.maxElapsedMs) {
        policy.onRetry?.({ operation: label, attempt: number, reason: error.status ? `${error.status} ${error.code}` : error.code, delayMs });
        await policy.sleep(delayMs);
        continue;
      }
    }
    throw error;
  }
}
