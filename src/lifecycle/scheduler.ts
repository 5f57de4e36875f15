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
 * done within that), and `wake()` (this process wrote a user) looks at the next due instant again.
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

/** A running scheduler. */
export interface LifecycleScheduler {
  /** Looks at the next due instant again (a nearer one may have been written) and sleeps until then. */
  wake(): void;
  /** Sweeps now and resolves with how many users it claimed or warned (for tests and the benchmark). */
  sweepNow(): Promise<number>;
  /** Stops sweeping; resolves once the sweep under way has finished. */
  stop(): Promise<void>;
}

/** Options of {@link startLifecycleScheduler}. */
export interface LifecycleSchedulerOptions {
  readonly store: Store;
  readonly log: Logger;
  /** The clock the scheduler compares due instants with; default the system's (tests inject one). */
  readonly now?: () => Date;
  readonly maxWaitMs?: number;
  readonly batchSize?: number;
  /** Sweep on a timer (default); false: only when `sweepNow()` is called (tests with an injected clock). */
  readonly timer?: boolean;
  /**
   * True when one connection serves the requests and the sweep alike (the embedded store): a
   * batch's transaction then holds every request, so batches adapt to {@link BATCH_TARGET_MS}.
   * False (a pool, PostgreSQL): readers never wait on the sweep's row locks, so every batch is
   * `batchSize` users. Default false.
   */
  readonly sharedConnection?: boolean;
}

/**
 * Starts the scheduler: a first sweep at once, then as described above. Failures of a sweep are
 * logged and retried at the next one; nothing throws out of it.
 */
export function startLifecycleScheduler(options: LifecycleSchedulerOptions): LifecycleScheduler {
  const { store, log } = options;
  const now = options.now ?? (() => new Date());
  const maxWaitMs = options.maxWaitMs ?? MAX_WAIT_MS;
  const batchSize = options.batchSize ?? BATCH_SIZE;
  const timed = options.timer ?? true;
  const sharedConnection = options.sharedConnection ?? false;
  let stopping = false;
  let running: Promise<number> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let waking = false;

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
  async function drain(batch: (at: Date, limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    let size = sharedConnection ? Math.min(batchSize, BATCH_START_SIZE) : batchSize;
    for (;;) {
      const started = performance.now();
      const done = await batch(now(), size);
      const took = performance.now() - started;
      total += done;
      if (done < size || stopping) return total;
      if (!sharedConnection) {
        await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
        continue;
      }
      if (took > BATCH_TARGET_MS) size = Math.max(1, Math.floor(size / 2));
      else if (took < BATCH_TARGET_MS / 2) size = Math.min(batchSize, size * 2);
      await new Promise((resolve) => setTimeout(resolve, Math.max(BATCH_PAUSE_MS, took)));
    }
  }

  async function sweep(): Promise<number> {
    let total = 0;
    total += await drain((at, limit) => expireGrants(store, at, limit));
    total += await drain((at, limit) => expireMemberships(store, at, limit));
    total += await drain((at, limit) => deactivateInactive(store, at, limit));
    total += await drain((at, limit) => sendWarnings(store, at, limit));
    if (total > 0) log.info({ changed: total }, 'access policies: due changes done');
    return total;
  }

  function schedule(delayMs: number): void {
    if (!timed || stopping) return;
    clearTimeout(timer);
    timer = setTimeout(() => void sweepNow().catch(() => {}), delayMs);
    timer.unref();
  }

  /** Sleeps until the next due instant, at most `maxWaitMs`. */
  async function scheduleNext(): Promise<void> {
    if (!timed || stopping) return;
    let delay = maxWaitMs;
    try {
      const next = await store.lifecycle.nextDue(now());
      if (next) delay = Math.min(maxWaitMs, Math.max(0, next.getTime() - now().getTime()));
    } catch (err) {
      log.warn({ err }, 'access policies: could not read the next due instant');
    }
    schedule(delay);
  }

  function sweepNow(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = sweep()
      .catch((err: unknown) => {
        log.warn({ err }, 'access policies: a sweep failed; the next one retries');
        return 0;
      })
      .finally(() => {
        running = undefined;
        if (again && !stopping) {
          again = false;
          void sweepNow();
        } else void scheduleNext();
      });
    return running;
  }

  if (timed) schedule(0);
  return {
    wake: () => {
      // One look at the next due instant at a time: a burst of writes costs one query, not one each.
      if (stopping || running || waking) return;
      waking = true;
      void scheduleNext().finally(() => (waking = false));
    },
    sweepNow,
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
