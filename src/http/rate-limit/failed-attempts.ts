import { hash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { andThen, type Awaitable } from '../../core/awaitable.ts';
import { AppError } from '../../core/errors.ts';
import { setRateLimitFields } from './rate-limit-fields.ts';
import type { TakeResult, TokenBuckets } from '../../rate-limits/token-buckets.ts';

/**
 * Counts one refused credential against the failed-attempt limit (`AUTH_FAILURE_LIMIT`,
 * docs/security.md, "The failed-attempt limit"), twice: once for the client's address and once
 * for the credential itself (by a SHA-256 of `realm` and the credential, so no secret is kept
 * in memory or Redis). Only refusals are counted and only refusals are limited: the caller
 * checks the credential first, so a valid one never meets these buckets and no one's failures,
 * from the same address or not, can refuse it.
 *
 * @param buckets - the limit's buckets (in memory or in Redis).
 * @param reply - receives the RateLimit fields of the tighter of the two buckets.
 * @param address - the client's address (`request.ip`: the socket's peer, or with `TRUST_PROXY`
 *   the address the proxy names).
 * @param realm - where the credential was presented (`admin`, or the workspace's subdomain), so a
 *   key refused on another workspace's host is not counted against its own.
 * @param credential - the credential as presented (may be empty).
 * @returns the `rate_limited` (429) error to answer with, with `Retry-After`, when either bucket
 *   was empty; undefined when the refusal is to be answered as usual (401). A bucket that could
 *   not be read (Redis unreachable) does not limit.
 */
export function countFailedAttempt(
  buckets: TokenBuckets,
  reply: FastifyReply,
  address: string,
  realm: string,
  credential: string,
): Awaitable<AppError | undefined> {
  const fingerprint = hash('sha256', `${realm}\n${credential}`, 'base64url');
  return andThen(buckets.take(`address:${address}`), (byAddress) =>
    andThen(buckets.take(`credential:${fingerprint}`), (byCredential) => {
      const taken = [byAddress, byCredential].filter((t): t is TakeResult => t !== undefined);
      if (taken.length === 0) {
        setRateLimitFields(reply, 'auth-failures', buckets, undefined);
        return undefined;
      }
      setRateLimitFields(reply, 'auth-failures', buckets, taken.reduce((a, b) => (b.remaining < a.remaining ? b : a)));
      const refused = taken.filter((t) => !t.allowed);
      if (refused.length === 0) return undefined;
      return new AppError('rate_limited', 'Too many failed attempts from this address or with this credential; retry after the time in Retry-After.', undefined, {
        'retry-after': String(Math.max(...refused.map((t) => t.retryAfterSeconds))),
      });
    }),
  );
}
