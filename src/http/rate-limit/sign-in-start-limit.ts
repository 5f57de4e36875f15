import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../core/errors.ts';
import { setRateLimitFields } from './rate-limit-fields.ts';
import type { RateLimits } from '../../rate-limits/rate-limits.ts';
import type { TokenBuckets } from '../../rate-limits/token-buckets.ts';

/** The two limits on starting a sign-in; either may be absent (turned off). */
export type SignInStartLimits = Pick<RateLimits, 'signInStartsPerAddress' | 'signInStartsPerWorkspace'>;

/**
 * An `onRequest` hook for a route that starts a sign-in with an identity provider (each start
 * stores a sign-in under way and may make the server contact the provider): takes one start
 * from the client address's bucket, then one from the bucket of `scopeOf(request)` (the
 * workspace's label, or one name for the operators' sign-in). A start refused by the first
 * bucket takes nothing from the second, so one address cannot spend a workspace's budget
 * beyond its own. A bucket that cannot be read (Redis unreachable) lets the start through.
 * Source: docs/security.md, "Hardening controls" (bounded sign-ins).
 * @throws AppError `rate_limited` (429) with `Retry-After` and the `RateLimit` fields of the
 *   bucket that refused.
 */
export function limitSignInStarts(limits: SignInStartLimits, scopeOf: (request: FastifyRequest) => string | undefined) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await takeStart(reply, 'sign-in-starts', limits.signInStartsPerAddress, request.ip, 'Too many sign-ins were started from this address.');
    const scope = scopeOf(request);
    if (scope !== undefined) {
      await takeStart(reply, 'sign-in-starts-workspace', limits.signInStartsPerWorkspace, scope, 'Too many sign-ins were started for this workspace.');
    }
  };
}

/** Takes one token of `buckets` for `key`, reporting it in the `RateLimit` fields. @throws AppError `rate_limited` when none is left. */
async function takeStart(reply: FastifyReply, policy: string, buckets: TokenBuckets | undefined, key: string, detail: string): Promise<void> {
  if (!buckets) return;
  const taken = await buckets.take(key);
  setRateLimitFields(reply, policy, buckets, taken);
  if (taken && !taken.allowed) {
    throw new AppError('rate_limited', `${detail} Try again in ${taken.retryAfterSeconds} s.`, undefined, {
      'retry-after': String(taken.retryAfterSeconds),
    });
  }
}
