/*
 * How far a stream may read (docs/operations.md, "Audit streams"). Audit ids come from a
 * sequence before their transaction commits, so a row may become visible after one with a
 * greater id; a reader that moved its cursor past a gap whose row had not committed yet would
 * never send that row. The horizon makes gaps final: it samples the last id handed out, then
 * the transactions open at that moment. Every id up to that last id was taken by a transaction
 * that was open then (an id is taken only once its transaction has an xid: migration 0019) or
 * has ended; once every one of those has ended too, each id up to it is either committed and
 * visible or never will be, and a stream may read through it.
 */

/** One sample of the audit ids: the last one handed out, then the transactions open at that moment. */
export interface AuditIdSample {
  /** The audit sequence's last value when sampled (0 before the first id). */
  readonly lastId: number;
  /** The transaction ids (as text) open just after `lastId` was read. */
  readonly openTransactions: readonly string[];
}

/** The settled horizon of one process: fed samples, it says through which audit id rows are final. */
export interface SettledHorizon {
  /**
   * Takes the newest sample and returns the greatest audit id through which every row is final
   * (committed, or never to be): the last id of the newest earlier sample (or this one) none of
   * whose open transactions is still open now. Never goes back.
   */
  observe(sample: AuditIdSample): number;
}

/**
 * Samples kept while a transaction stays open; beyond it the oldest is dropped, which only
 * means its rows settle with a later sample (a later sample saw every transaction it saw that
 * is still open, and more ids).
 */
const MAX_PENDING = 64;

/** A horizon with nothing settled yet (docs/operations.md, "Audit streams"). */
export function createSettledHorizon(): SettledHorizon {
  const pending: Array<{ lastId: number; open: readonly string[] }> = [];
  let settled = 0;
  return {
    observe(sample) {
      pending.push({ lastId: sample.lastId, open: sample.openTransactions });
      if (pending.length > MAX_PENDING) pending.shift();
      const openNow = new Set(sample.openTransactions);
      // A transaction open in an earlier sample and still open is open in every later one: the
      // first sample with an open transaction stops the walk.
      while (pending.length > 0 && !pending[0]!.open.some((xid) => openNow.has(xid))) {
        settled = Math.max(settled, pending.shift()!.lastId);
      }
      return settled;
    },
  };
}
