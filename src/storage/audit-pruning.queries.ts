import { sql } from 'drizzle-orm';
import type { AuditPruning, RetentionPeriod } from '../core/audit/audit-retention.ts';
import type { Database } from './database.ts';
import { rowCount } from './rows.ts';

/**
 * Deletes up to `batchSize` audit rows (of every workspace, of operators, of sessions) that
 * occurred longer than `retention` ago, oldest first, in one short statement that passes over
 * rows a concurrent pruner holds (`audit_events__occurred_at` finds them). The period is
 * PostgreSQL's own interval arithmetic, so `P1Y` is a calendar year. Resolves with how many rows
 * it deleted. Source: docs/operations.md, "Retention of the audit trail".
 */
export async function pruneAudit(db: Database, retention: RetentionPeriod, batchSize: number): Promise<number> {
  const { years, months, weeks, days, hours, minutes, seconds } = retention;
  const period = sql`make_interval(years => ${years}::int, months => ${months}::int, weeks => ${weeks}::int, days => ${days}::int,
      hours => ${hours}::int, mins => ${minutes}::int, secs => ${seconds}::double precision)`;
  const result = await db.execute(sql`delete from audit_events where id in (
      select id from audit_events where occurred_at < now() - ${period}
      order by occurred_at limit ${batchSize}::int for update skip locked
    )`);
  return rowCount(result);
}

/** The pruner's port over `db` ({@link pruneAudit}). */
export function createAuditPruning(db: Database): AuditPruning {
  return { prune: (retention, batchSize) => pruneAudit(db, retention, batchSize) };
}
