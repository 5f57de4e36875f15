import { sql, type SQL } from 'drizzle-orm';
import type { SessionPruning } from '../core/sessions/session-pruning.ts';
import type { Database } from './database.ts';
import { rowCount } from './rows.ts';

/** Deletes up to `limit` rows of `table` (by its key `key`) where `over` holds, passing over rows a concurrent pruner holds. */
async function deleteOver(db: Database, table: string, key: string, over: SQL, limit: number): Promise<number> {
  const result = await db.execute(sql`delete from ${sql.identifier(table)} where (${sql.raw(key)}) in (
      select ${sql.raw(key)} from ${sql.identifier(table)} where ${over}
      limit ${limit}::int for update skip locked
    )`);
  return rowCount(result);
}

/**
 * Deletes, in short statements of at most `batchSize` rows per table, console sessions
 * (`console_sessions`, `operator_sessions`) over for longer than `retentionMs` — signed out,
 * past their absolute end, or unused for `idleMs` — and sign-ins under way (`oidc_sign_ins`,
 * `operator_sign_ins`, completed or not) as soon as they have expired. Resolves with how many
 * rows it deleted.
 */
export async function pruneSessions(db: Database, retentionMs: number, idleMs: number, batchSize: number): Promise<number> {
  const keep = sql`now() - make_interval(secs => ${retentionMs / 1000}::double precision)`;
  const idle = sql`now() - make_interval(secs => ${(retentionMs + idleMs) / 1000}::double precision)`;
  const sessionOver = sql`ended_at < ${keep} or expires_at < ${keep} or last_seen_at < ${idle}`;
  // A sign-in past its end can no longer finish and holds nothing worth a look: swept at once.
  const signInOver = sql`expires_at < now()`;
  let deleted = 0;
  deleted += await deleteOver(db, 'console_sessions', 'workspace_id, id_hash', sessionOver, batchSize);
  deleted += await deleteOver(db, 'operator_sessions', 'id_hash', sessionOver, batchSize);
  deleted += await deleteOver(db, 'oidc_sign_ins', 'workspace_id, state_hash', signInOver, batchSize);
  deleted += await deleteOver(db, 'operator_sign_ins', 'state_hash', signInOver, batchSize);
  return deleted;
}

/** The pruner's port over `db` ({@link pruneSessions}). */
export function createSessionPruning(db: Database): SessionPruning {
  return { prune: (retentionMs, idleMs, batchSize) => pruneSessions(db, retentionMs, idleMs, batchSize) };
}
