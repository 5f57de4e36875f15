import { deactivateInactive, expireGrants, expireMemberships, sendWarnings } from '../core/lifecycle/sweep.ts';
import type { Logger } from '../core/logger.ts';
import type { Store } from '../core/ports.ts';

/*
 * The scheduler of access that ends on time (docs/contract.md Part B, "Access that ends on
 * time"; docs/architecture.md, background work): runs in every server process against the
 * shared database. A sweep drains each kind of due work in batches, each its own short
 * transaction whose claim skips the users another process holds, so replicas share a sweep and
 * a crash undoes only the batch in flight. Between sweeps it sleeps until the next due instant
 * the database knows, never longer than `maxWaitMs` (so anything written by another process is
 * done within that), and a wake (this process wrote a user) looks at the next due instant again.
 * The sleeping and waking are the server's scheduler's (server/service.ts); this module sweeps.
 */

/** Most users per batch: a batch's transaction, and the row locks it holds, stay short. */
const BATCH_SIZE = 100;
/** Longest sleep between two sweeps, in ms: the bound on how late a due change is on an idle server. */
const MAX_WAIT_MS = 5_000;
/** Shortest pause between two batches of one sweep, in ms, leaving the database to the requests in between. */
const BATCH_PAUSE_MS = 5;
/** How long one batch should take, in ms: the longest a request waits behind the sweep. */
const BATCH_TARGET_MS = 50;
/** Users in a sweep's first batch; later ones adapt to {@link BATCH_TARGET_MS}. */
const BATCH_START_SIZE = 20;

/** The sweeps of access that ends on time, without timers: the server's scheduler runs them. */
export interface LifecycleSweeper {
  /**
   * Sweeps now and resolves with how many users it claimed or warned; ends between two batches
   * once `stopping` is aborted. Rejects with the store's error (the next sweep retries).
   */
  sweep(stopping?: AbortSignal): Promise<number>;
  /** The delay until the next due instant the database knows, at most `maxWaitMs` (also when it cannot be read: logged). */
  nextDelayMs(): Promise<number>;
}

/** Options of {@link createLifecycleSweeper}. */
export interface LifecycleSweeperOptions {
  readonly store: Store;
  readonly log: Logger;
  /** The clock the sweeps compare due instants with; default the system's (tests inject one). */
  readonly now?: () => Date;
  readonly maxWaitMs?: number;
  readonly batchSize?: number;
  /**
   * True when one connection serves the requests and the sweep alike (the embedded store): a
   * batch's transaction then holds every request, so batches adapt to {@link BATCH_TARGET_MS}.
   * False (a pool, PostgreSQL): readers never wait on the sweep's row locks, so every batch is
   * `batchSize` users. Default false.
   */
  readonly sharedConnection?: boolean;
}

/** Longest sleep between two sweeps by default, in ms (the scheduler's interval for them). */
export const LIFECYCLE_MAX_WAIT_MS = MAX_WAIT_MS;

/**
 * The sweeper as described above: the server's scheduler (server/scheduler.ts) runs a sweep at
 * start, then again after {@link LifecycleSweeper.nextDelayMs}, and sooner when this process
 * wrote a user. Throws nothing when built.
 */
export function createLifecycleSweeper(options: LifecycleSweeperOptions): LifecycleSweeper {
  const { store, log } = options;
  const now = options.now ?? (() => new Date());
  const maxWaitMs = options.maxWaitMs ?? MAX_WAIT_MS;
  const batchSize = options.batchSize ?? BATCH_SIZE;
  const sharedConnection = options.sharedConnection ?? false;

  /**
   * Runs `batch` until it returns less than it was asked for. On a shared connection the batch
   * size adapts so that one batch takes about {@link BATCH_TARGET_MS} (halved after a slower
   * batch, doubled after a much faster one, at most `batchSize`), and each batch is followed by
   * a pause as long as it took: requests get at least half of the time during a sweep (a batch
   * of 100 held every request of the embedded store for a second). On a pool the size stays
   * `batchSize`: there a batch's time under load is mostly its wait for a busy process, not a
   * lock anyone waits on, and adapting to it shrank batches to one user (20 users/s at 100,000
   * due; docs/performance.md, "Access that ends on time, at scale").
   */
  async function drain(batch: (at: Date, limit: number) => Promise<number>, stopping: AbortSignal | undefined): Promise<number> {
    let total = 0;
    let size = sharedConnection ? Math.min(batchSize, BATCH_START_SIZE) : batchSize;
    for (;;) {
      const started = performance.now();
      const done = await batch(now(), size);
      const took = performance.now() - started;
      total += done;
      if (done < size || stopping?.aborted) return total;
      if (!sharedConnection) {
        await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
        continue;
      }
      if (took > BATCH_TARGET_MS) size = Math.max(1, Math.floor(size / 2));
      else if (took < BATCH_TARGET_MS / 2) size = Math.min(batchSize, size * 2);
      await new Promise((resolve) => setTimeout(resolve, Math.max(BATCH_PAUSE_MS, took)));
    }
  }

  return {
    async sweep(stopping) {
      let total = 0;
      total += await drain((at, limit) => expireGrants(store, at, limit), stopping);
      total += await drain((at, limit) => expireMemberships(store, at, limit), stopping);
      total += await drain((at, limit) => deactivateInactive(store, at, limit), stopping);
      total += await drain((at, limit) => sendWarnings(store, at, limit), stopping);
      if (total > 0) log.info({ changed: total }, 'access policies: due changes done');
      return total;
    },
    async nextDelayMs() {
      try {
        const next = await store.lifecycle.nextDue(now());
        return next ? Math.min(maxWaitMs, Math.max(0, next.getTime() - now().getTime())) : maxWaitMs;
      } catch (err) {
        log.warn({ err }, 'access policies: could not read the next due instant');
        return maxWaitMs;
      }
    },
  };
}
