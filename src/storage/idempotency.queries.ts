import { and, eq, lt, sql, type SQL } from 'drizzle-orm';
import type { Database } from './database.ts';
import { idempotencyKeys } from './schema.ts';

/** How long a first response is kept for replay (docs/contract.md Part B: 24 h, as Stripe). */
export const IDEMPOTENCY_TTL_HOURS = 24;

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
  completion(workspaceId: number, key: string, response: StoredResponse): SQL;
  /** Forgets a claim whose request failed on our side, so a retry runs again. */
  release(workspaceId: number, key: string): Promise<void>;
  /** Deletes records past their 24 hours; returns how many. */
  purgeExpired(): Promise<number>;
}

/** Prefix of the advisory-lock key of an idempotency key (workspace id and key follow). */
const IDEMPOTENCY_LOCK_PREFIX = 'wum-idempotency:';

const expired = sql`${idempotencyKeys.createdAt} < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`;

/** The idempotency store over Drizzle (one upsert decides who runs the request). */
export function createIdempotencyStore(db: Database): IdempotencyStore {
  const byKey = (workspaceId: number, key: string) =>
    and(eq(idempotencyKeys.workspaceId, workspaceId), eq(idempotencyKeys.key, key));

  return {
    async begin(workspaceId, key, fingerprint, lockSeconds) {
      const lockedUntil = sql`now() + make_interval(secs => ${lockSeconds})`;
      const claimed = await db
        .insert(idempotencyKeys)
        .values({ workspaceId, key, fingerprint, lockedUntil })
        .onConflictDoUpdate({
          target: [idempotencyKeys.workspaceId, idempotencyKeys.key],
          set: {
            fingerprint,
            createdAt: sql`now()`,
            lockedUntil,
            responseStatus: null,
            responseHeaders: null,
            responseBody: null,
          },
          setWhere: sql`${expired} or (${idempotencyKeys.responseStatus} is null
            and ${idempotencyKeys.lockedUntil} < now() and ${idempotencyKeys.fingerprint} = ${fingerprint})`,
        })
        .returning({ key: idempotencyKeys.key });
      if (claimed.length > 0) return { state: 'started' };
      const [row] = await db.select().from(idempotencyKeys).where(byKey(workspaceId, key));
      if (!row) return this.begin(workspaceId, key, fingerprint, lockSeconds);
      if (row.fingerprint !== fingerprint) return { state: 'mismatch' };
      if (row.responseStatus === null) return { state: 'in_flight' };
      return {
        state: 'replay',
        response: { status: row.responseStatus, headers: row.responseHeaders ?? {}, body: row.responseBody ?? '' },
      };
    },

    async tryLock(workspaceId, key) {
      const lockKey = `${IDEMPOTENCY_LOCK_PREFIX}${workspaceId}:${key}`;
      const result = (await db.execute(
        sql`select pg_try_advisory_xact_lock(hashtextextended(${lockKey}, 0)) as locked`,
      )) as unknown as { rows: Array<{ locked: boolean }> };
      return result.rows[0]?.locked === true;
    },

    async complete(workspaceId, key, response) {
      await db.execute(this.completion(workspaceId, key, response));
    },

    completion(workspaceId, key, response) {
      return db
        .update(idempotencyKeys)
        .set({
          responseStatus: response.status,
          responseHeaders: response.headers,
          responseBody: response.body,
          lockedUntil: null,
        })
        .where(byKey(workspaceId, key))
        .getSQL();
    },

    async release(workspaceId, key) {
      await db.delete(idempotencyKeys).where(byKey(workspaceId, key));
    },

    async purgeExpired() {
      const deleted = await db
        .delete(idempotencyKeys)
        .where(lt(idempotencyKeys.createdAt, sql`now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`))
        .returning({ key: idempotencyKeys.key });
      return deleted.length;
    },
  };
}
