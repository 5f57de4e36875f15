import type { PendingStatement } from './request-transaction.ts';

/*
 * The idempotency records behind `Idempotency-Key`, a port of the storage that the HTTP adapter
 * uses besides the domain's store (storage/idempotency.queries.ts implements it; the composition
 * root hands it to the app), so that http/ needs nothing from storage/.
 */

/** A stored first response. */
export interface StoredResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** What a request carrying an idempotency key should do. */
export type IdempotencyOutcome =
  | { readonly state: 'started' }
  | { readonly state: 'replay'; readonly response: StoredResponse }
  | { readonly state: 'mismatch' }
  | { readonly state: 'in_flight' };

/** Stored idempotency records, per workspace and key, shared by every replica. */
export interface IdempotencyStore {
  /**
   * Claims `key` for a request with `fingerprint`, or reports what the earlier request left:
   * its response (`replay`), a different request (`mismatch`) or one still running
   * (`in_flight`). An expired record, or an abandoned claim older than `lockSeconds` for the
   * same request, is taken over.
   */
  begin(workspaceId: number, key: string, fingerprint: string, lockSeconds: number): Promise<IdempotencyOutcome>;
  /**
   * Inside a request transaction (request-transaction.ts): takes the key's lock for the rest
   * of that transaction, or returns false when another request holds it (it is in flight).
   * A transaction-scoped advisory lock: released by commit, by rollback, and by a connection
   * or server that dies, so a request lost in a failover never leaves its key locked.
   * Source: PostgreSQL "Advisory Locks" (`pg_try_advisory_xact_lock`).
   */
  tryLock(workspaceId: number, key: string): Promise<boolean>;
  /** Stores the first response for replay. */
  complete(workspaceId: number, key: string, response: StoredResponse): Promise<void>;
  /** The statement {@link complete} runs, for a caller that sends it along with its commit. */
  completion(workspaceId: number, key: string, response: StoredResponse): PendingStatement;
  /** Forgets a claim whose request failed on our side, so a retry runs again. */
  release(workspaceId: number, key: string): Promise<void>;
  /** Deletes records past their 24 hours; returns how many. */
  purgeExpired(): Promise<number>;
}
