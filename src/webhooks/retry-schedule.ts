/** Share of a retry delay by which jitter may move it either way. */
const JITTER = 0.2;

/**
 * The delay before the retry that follows attempt number `attempts` (1 = the first attempt
 * failed), in ms, or undefined when the schedule is used up: `scheduleMs[attempts - 1]`, moved
 * by up to ±20 % at random so that deliveries failing together do not retry together.
 * Source: docs/contract.md Part B, Events and webhooks (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, with jitter).
 */
export function retryDelayMs(scheduleMs: readonly number[], attempts: number, random: () => number = Math.random): number | undefined {
  const base = scheduleMs[attempts - 1];
  if (base === undefined) return undefined;
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}
