import { EVENT_RETENTION_DAYS } from '../core/events/event.ts';
import type { Logger } from '../core/logger.ts';
import type { EventPruning } from '../core/webhooks/delivery-queue.ts';

/** Events deleted per statement: short statements, so no lock is held for long. */
const BATCH_SIZE = 1000;
/** Pause between two batches, in ms, leaving the database to the requests in between. */
const BATCH_PAUSE_MS = 50;
/** Delay of the first pruning after start, in ms (not in the middle of a start-up). */
const FIRST_RUN_DELAY_MS = 30_000;

/** A running pruner. */
export interface EventPruner {
  /** Prunes now, batch by batch, until nothing is older than the retention; resolves with the count. */
  pruneNow(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Deletes events older than 30 days (docs/contract.md Part B: "kept 30 days"), with their webhook
 * deliveries, every `intervalMs` in each server process: in batches of 1000 old rows, each its
 * own short statement (`SKIP LOCKED`, so the pruners of several replicas do not wait for each
 * other), with a pause between batches. Writers append new events and never touch old ones,
 * so pruning never blocks them.
 */
export function startEventPruner(options: { events: EventPruning; intervalMs: number; log: Logger }): EventPruner {
  const { events, log } = options;
  let stopping = false;
  let current: Promise<number> | undefined;

  async function pruneAll(): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await events.prune(EVENT_RETENTION_DAYS, BATCH_SIZE);
      total += deleted;
      if (deleted < BATCH_SIZE || stopping) return total;
      await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
    }
  }

  const pruneNow = () => {
    current ??= pruneAll()
      .then((n) => {
        if (n > 0) log.info({ deleted: n }, 'pruned old events');
        return n;
      })
      .finally(() => (current = undefined));
    return current;
  };
  const tick = () => void pruneNow().catch((err) => log.warn({ err }, 'could not prune old events'));
  const first = setTimeout(tick, Math.min(FIRST_RUN_DELAY_MS, options.intervalMs));
  const every = setInterval(tick, options.intervalMs);
  first.unref();
  every.unref();
  return {
    pruneNow,
    async stop() {
      stopping = true;
      clearTimeout(first);
      clearInterval(every);
      await current?.catch(() => {});
    },
  };
}
