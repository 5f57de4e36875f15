import { and, asc, count, desc, eq, gt, gte, lt, lte, max, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Actor } from '../core/actor.ts';
import { pageOffset } from '../core/pagination.ts';
import type { AuditEntry, AuditEvent, AuditFilter, AuditKeyset, AuditRepository } from '../core/audit/audit-repository.ts';
import type { Database } from './database.ts';
import { NamedStatement, ph } from './named-statement.ts';
import { auditEvents } from './schema.ts';

function toEvent(row: typeof auditEvents.$inferSelect): AuditEvent {
  return {
    id: Number(row.id),
    workspaceId: row.workspaceId === null ? null : Number(row.workspaceId),
    occurredAt: row.occurredAt,
    actor: { type: row.actorType as Actor['type'], id: row.actorId, label: row.actorLabel, requestId: row.requestId },
    action: row.action,
    targetType: row.targetType,
    targetId: row.targetId,
    userId: row.userId,
    before: row.before,
    after: row.after,
  };
}

/**
 * The values of an audit entry, by name, with their SQL types: each bound as a placeholder of
 * that name, or, in a batch, given per row (a bulk import's users differ in target, user,
 * before and after; the changes of several requests written together in every one).
 */
export const AUDIT_VALUE_TYPES = {
  actorType: 'text',
  actorId: 'text',
  actorLabel: 'text',
  requestId: 'text',
  action: 'text',
  targetType: 'text',
  targetId: 'text',
  userId: 'uuid',
  before: 'jsonb',
  after: 'jsonb',
} as const;

/** The name of a value of an audit entry ({@link AUDIT_VALUE_TYPES}). */
export type AuditValue = keyof typeof AUDIT_VALUE_TYPES;

/**
 * Inserts the audit event bound by {@link auditEventParams}: once, or (given `source`, a CTE
 * name) once per row of `source`, so that a change and its event can be one statement. `perRow`
 * replaces bound values by expressions over the row `s` of `source`, for a batch whose rows
 * are different users.
 */
export function auditInsert(source?: string, perRow: Partial<Record<AuditValue, SQL>> = {}): SQL {
  const values = (Object.keys(AUDIT_VALUE_TYPES) as AuditValue[]).map(
    (name) => perRow[name] ?? sql`${ph(name)}::${sql.raw(AUDIT_VALUE_TYPES[name])}`,
  );
  return sql`insert into audit_events
      (workspace_id, actor_type, actor_id, actor_label, request_id, action, target_type, target_id, user_id, before, after)
    select ${ph('workspaceId')}::int8, ${sql.join(values, sql`, `)}
    ${source ? sql`from ${sql.identifier(source)} s` : sql``}`;
}

/** The values of `entry` by the names of {@link AUDIT_VALUE_TYPES}; `before` and `after` as they are (objects or null). */
export function auditValues(entry: AuditEntry): Record<AuditValue, unknown> {
  return {
    actorType: entry.actor.type,
    actorId: entry.actor.id ?? null,
    actorLabel: entry.actor.label ?? null,
    requestId: entry.actor.requestId ?? null,
    action: entry.action,
    targetType: entry.targetType,
    targetId: entry.targetId,
    userId: entry.userId ?? null,
    before: entry.before ?? null,
    after: entry.after ?? null,
  };
}

/** The values of {@link auditInsert}'s placeholders for `entry`. */
export function auditEventParams(entry: AuditEntry): Record<string, unknown> {
  const values = auditValues(entry);
  return {
    ...values,
    workspaceId: entry.workspaceId ?? null,
    before: values.before === null ? null : JSON.stringify(values.before),
    after: values.after === null ? null : JSON.stringify(values.after),
  };
}

/**
 * A bound as a scalar subquery, which the planner cannot evaluate: as a value, on a table not
 * analyzed yet, a cursor or a limit made it read every event of the workspace from a bitmap
 * and sort them (test/storage/plans-unanalyzed.test.ts), where reading the index range in
 * order and stopping at the limit is the plan wanted whatever the statistics say. The same
 * reasoning as the events feed's (events.queries.ts).
 */
function scalar(value: number, type: 'bigint' | 'int' = 'bigint'): SQL {
  return type === 'int' ? sql`(select ${value}::int)` : sql`(select ${value}::bigint)`;
}

/**
 * The conditions of an audit read. A keyset bound is on `id` in the listing's direction, so the
 * read walks the index on (workspace_id, id), or the primary key for every workspace, and a row
 * written meanwhile neither shifts nor repeats the rows after the cursor.
 */
function auditWhere(workspaceId: number | null, filter: AuditFilter, keyset: AuditKeyset): SQL | undefined {
  const { afterId, maxId } = keyset;
  return and(
    workspaceId === null ? undefined : eq(auditEvents.workspaceId, workspaceId),
    filter.action === undefined ? undefined : eq(auditEvents.action, filter.action),
    filter.actorType === undefined ? undefined : eq(auditEvents.actorType, filter.actorType),
    filter.targetId === undefined ? undefined : eq(auditEvents.targetId, filter.targetId),
    filter.userId === undefined ? undefined : eq(auditEvents.userId, filter.userId),
    filter.since === undefined ? undefined : gte(auditEvents.occurredAt, filter.since),
    filter.until === undefined ? undefined : lt(auditEvents.occurredAt, filter.until),
    afterId === undefined ? undefined : filter.newestFirst ? lt(auditEvents.id, scalar(afterId)) : gt(auditEvents.id, scalar(afterId)),
    maxId === undefined ? undefined : lte(auditEvents.id, scalar(maxId)),
  );
}

/** Every change of the API writes one event: its statement is built and planned once. */
const appendEvent = new NamedStatement('wum_audit_append', () => auditInsert());

/** The audit trail repository over Drizzle. */
export function createAuditRepository(db: Database): AuditRepository {
  return {
    async append(entry) {
      await appendEvent.run(db, auditEventParams(entry));
    },

    async findPage(workspaceId, page, filter: AuditFilter = {}) {
      const where = auditWhere(workspaceId, filter, {});
      const [totalRow] = await db.select({ n: count() }).from(auditEvents).where(where);
      const rows = await db
        .select()
        .from(auditEvents)
        .where(where)
        .orderBy(filter.newestFirst ? desc(auditEvents.id) : asc(auditEvents.id))
        .limit(page.pageSize)
        .offset(pageOffset(page));
      return { rows: rows.map(toEvent), total: totalRow?.n ?? 0 };
    },

    async findBatch(workspaceId, limit, filter, keyset) {
      const rows = await db
        .select()
        .from(auditEvents)
        .where(auditWhere(workspaceId, filter, keyset))
        .orderBy(filter.newestFirst ? desc(auditEvents.id) : asc(auditEvents.id))
        // Drizzle writes any SQL object given as the limit as it is (as it does a placeholder).
        .limit(scalar(limit, 'int') as unknown as Placeholder);
      return rows.map(toEvent);
    },

    async lastId() {
      const [row] = await db.select({ id: max(auditEvents.id) }).from(auditEvents);
      return row?.id === null || row?.id === undefined ? 0 : Number(row.id);
    },
  };
}
