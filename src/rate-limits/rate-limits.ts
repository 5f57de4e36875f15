import type { Config } from '../config/load-config.ts';
import { KeyedTokenBuckets } from './memory-token-buckets.ts';
import type { TokenBuckets } from './token-buckets.ts';

/*
 * The rate limits are a port: the HTTP adapter asks them and writes the RateLimit fields or the
 * 429; which store holds the buckets (this process's memory, or Redis shared by the replicas)
 * is chosen by the composition root (server/app-dependencies.ts). Source: docs/architecture.md,
 * "The rate limits".
 */

/** The limits of the external API and of the sign-in starts; a limit set to 0 is absent. */
export interface RateLimits {
  /** Token bucket per API key id (`RATE_LIMIT_PER_KEY` a second, `RATE_LIMIT_BURST` tokens). */
  readonly perKey: TokenBuckets | undefined;
  /** Failed key and token attempts, per client address and per credential (`AUTH_FAILURE_LIMIT` a minute each; http/rate-limit/failed-attempts.ts). */
  readonly authFailures: TokenBuckets | undefined;
  /** Sign-in starts per client address (`SIGN_IN_START_LIMIT` a minute). */
  readonly signInStartsPerAddress: TokenBuckets | undefined;
  /** Sign-in starts per workspace, the operators' counting as one (`SIGN_IN_START_LIMIT_PER_WORKSPACE` a minute). */
  readonly signInStartsPerWorkspace: TokenBuckets | undefined;
}

/** Makes the buckets of one limit: its name (`policy`), size, and refill of `refill` tokens per `intervalMs`. */
export type BucketsFactory = (policy: string, burst: number, refill: number, intervalMs: number) => TokenBuckets;

/**
 * The limits `config` asks for, each made by `buckets`; a limit configured as 0 is absent.
 * Source: docs/contract.md Part B, "Retries, limits and audit".
 */
export function rateLimitsOf(config: Config, buckets: BucketsFactory): RateLimits {
  const { perSecond, burst } = config.rateLimit;
  const perMinute = (policy: string, limit: number) => (limit > 0 ? buckets(policy, limit, limit, 60_000) : undefined);
  return {
    signInStartsPerAddress: perMinute('sign-in-starts', config.bounds.signInStartsPerAddress),
    signInStartsPerWorkspace: perMinute('sign-in-starts-workspace', config.bounds.signInStartsPerWorkspace),
    perKey: perSecond > 0 && burst > 0 ? buckets('per-key', burst, perSecond, 1000) : undefined,
    authFailures: perMinute('auth-failures', config.authFailureLimit),
  };
}

/**
 * The limits of `config` in this process's memory ({@link KeyedTokenBuckets}): what a single
 * replica uses, and what an app built without other limits gets. Does no I/O.
 */
export function memoryRateLimits(config: Config): RateLimits {
  return rateLimitsOf(config, (_policy, burst, refill, intervalMs) => new KeyedTokenBuckets(burst, refill, intervalMs));
}
