import { and, eq, lt, sql, type SQL } from 'drizzle-orm';
import type { Database } from './database.ts';
import { idempotencyKeys } from './schema.ts';
import type { IdempotencyStore, StoredResponse } from '../core/idempotency/idempotency-store.ts';
import { pendingStatement } from './request-transaction.ts';
import { rowsOf } from './rows.ts';

/** How long a first response is kept for replay (docs/contract.md Part B: 24 h, as Stripe). */
export const IDEMPOTENCY_TTL_HOURS = 24;

/** Prefix of the advisory-lock key of an idempotency key (workspace id and key follow). */
const IDEMPOTENCY_LOCK_PREFIX = 'wum-idempotency:';

const expired = sql`${idempotencyKeys.createdAt} < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`;

/** The idempotency store over Drizzle (one upsert decides who runs the request). */
export function createIdempotencyStore(db: Database): IdempotencyStore {
  const byKey = (workspaceId: number, key: string) =>
    and(eq(idempotencyKeys.workspaceId, workspaceId), eq(idempotencyKeys.key, key));

  const completionOf = (workspaceId: number, key: string, response: StoredResponse): SQL =>
    db
      .update(idempotencyKeys)
      .set({
        responseStatus: response.status,
        responseHeaders: response.headers,
        responseBody: response.body,
        lockedUntil: null,
      })
      .where(byKey(workspaceId, key))
      .getSQL();

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
      const [row] = rowsOf<{ locked: boolean }>(await db.execute(sql`select pg_try_advisory_xact_lock(hashtextextended(${lockKey}, 0)) as locked`));
      return row?.locked === true;
    },

    async complete(workspaceId, key, response) {
      await db.execute(completionOf(workspaceId, key, response));
    },

    completion: (workspaceId, key, response) => pendingStatement(completionOf(workspaceId, key, response)),

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
