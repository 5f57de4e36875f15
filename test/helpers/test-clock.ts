/**
 * A clock for an app under test (`AppDependencies.now`): real time plus an offset the test moves
 * forward with `advance`, so a test of an expiry advances time instead of sleeping until it passes.
 */
export interface TestClock {
  /** The clock's time, ms since the epoch: `Date.now()` plus every advance so far. */
  readonly now: () => number;
  /** Moves the clock `ms` forward. */
  advance(ms: number): void;
}

/** A clock that reads the real time until a test advances it. */
export function testClock(): TestClock {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms) {
      offset += ms;
    },
  };
}
