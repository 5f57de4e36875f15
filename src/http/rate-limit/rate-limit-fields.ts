import type { FastifyReply } from 'fastify';
import type { TakeResult, TokenBuckets } from '../../rate-limits/token-buckets.ts';

/**
 * Sets the IETF `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers-10
 * §§ 3-4): the quota is the bucket size over the time it takes to refill it completely.
 * `taken` undefined (the limit failed open: its state is unknown) sets the policy alone.
 */
export function setRateLimitFields(reply: FastifyReply, policy: string, buckets: TokenBuckets, taken: TakeResult | undefined): void {
  const windowSeconds = Math.max(1, Math.ceil((buckets.burst / buckets.refill) * (buckets.intervalMs / 1000)));
  reply.header('ratelimit-policy', `"${policy}";q=${buckets.burst};w=${windowSeconds}`);
  if (taken) reply.header('ratelimit', `"${policy}";r=${taken.remaining};t=${taken.resetSeconds}`);
}
