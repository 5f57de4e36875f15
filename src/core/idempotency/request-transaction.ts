/*
 * The transaction spanning one idempotent request, a port of the storage that the HTTP adapter
 * uses besides the domain's store (storage/request-transaction.ts implements it; the
 * composition root hands it to the app), so that http/ needs nothing from storage/.
 */

/**
 * A statement prepared by the storage to run later, opaque to its callers: what
 * `IdempotencyStore.completion` (idempotency-store.ts) returns and {@link RequestTransaction.commit} runs.
 */
export interface PendingStatement {
  readonly [pending]: true;
}
declare const pending: unique symbol;

/** An open transaction spanning one request; exactly one of `commit` or `rollback` ends it. */
export interface RequestTransaction {
  /** Runs `work` with this transaction as the database of every storage call it makes. */
  run<T>(work: () => T): T;
  /**
   * Runs `last` (a statement with its values) and commits, in one round trip. Rejects when
   * `last` failed, the commit failed, or its outcome is unknown (the connection broke, no reply
   * in time); the caller must then not report success.
   */
  commit(last?: PendingStatement): Promise<void>;
  /** Rolls back; never rejects (a broken connection rolls back by itself). */
  rollback(): Promise<void>;
}
