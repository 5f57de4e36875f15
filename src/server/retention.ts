import { EVENT_RETENTION_DAYS } from '../core/events/event.ts';
import type { Logger } from '../core/logger.ts';
import { ENDED_SESSION_RETENTION_MS, type SessionPruning } from '../core/sessions/session-pruning.ts';
import type { AuditPruning, RetentionPeriod } from '../core/audit/audit-retention.ts';
import type { EventPruning } from '../core/events/event-repository.ts';

/** Rows deleted per statement: short statements, so no lock is held for long. */
const BATCH_SIZE = 1000;
/** Pause between two batches, in ms, leaving the database to the requests in between. */
const BATCH_PAUSE_MS = 50;
/** Delay of the first pass after start, in ms (not in the middle of a start-up). */
export const RETENTION_FIRST_DELAY_MS = 30_000;

/** What {@link retentionPass} deletes. */
export interface RetentionOptions {
  readonly events: EventPruning;
  /** Console sessions and sign-ins that are over, pruned in the same pass; absent: not pruned. */
  readonly sessions?: { readonly pruning: SessionPruning; readonly idleMs: number } | undefined;
  /** Audit rows older than `retention` (`AUDIT_RETENTION`), pruned in the same pass; absent: kept. */
  readonly audit?: { readonly pruning: AuditPruning; readonly retention: RetentionPeriod } | undefined;
  readonly log: Logger;
}

/**
 * The retention pass, run by the process's scheduler (scheduler.ts) every `WEBHOOK_PRUNE_INTERVAL_MS`:
 * deletes events older than 30 days (docs/contract.md Part B: "kept 30 days") with their webhook
 * deliveries, console sessions over for more than a day ({@link ENDED_SESSION_RETENTION_MS}),
 * expired sign-ins and audit rows past `AUDIT_RETENTION`, in batches of 1000 old rows, each its
 * own short statement (`SKIP LOCKED`, so the passes of several replicas do not wait for each
 * other), with a pause between batches, until nothing is older or `stopping` is aborted.
 * Writers append new events and never touch old ones, and nothing uses a session that is over,
 * so pruning never blocks them. The pass resolves with the rows deleted (events, sessions,
 * sign-ins, audit rows); it rejects with the database's error.
 */
export function retentionPass(options: RetentionOptions): (stopping?: AbortSignal) => Promise<number> {
  const { events, sessions, audit, log } = options;

  /** Runs `batch` until it deletes less than a whole batch; resolves with the rows deleted. */
  async function drain(batch: () => Promise<number>, stopping: AbortSignal | undefined): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await batch();
      total += deleted;
      if (deleted < BATCH_SIZE || stopping?.aborted) return total;
      await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
    }
  }

  return async (stopping) => {
    const pruned = await drain(() => events.prune(EVENT_RETENTION_DAYS, BATCH_SIZE), stopping);
    if (pruned > 0) log.info({ deleted: pruned }, 'pruned old events');
    const ended = sessions ? await drain(() => sessions.pruning.prune(ENDED_SESSION_RETENTION_MS, sessions.idleMs, BATCH_SIZE), stopping) : 0;
    if (ended > 0) log.info({ deleted: ended }, 'pruned ended console sessions');
    const audited = audit ? await drain(() => audit.pruning.prune(audit.retention, BATCH_SIZE), stopping) : 0;
    if (audited > 0) log.info({ deleted: audited }, 'pruned audit rows past their retention');
    return pruned + ended + audited;
  };
}
