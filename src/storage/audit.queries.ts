import { asc, count, eq, sql } from 'drizzle-orm';
import type { Actor } from '../core/actor.ts';
import { pageOffset } from '../core/pagination.ts';
import type { AuditEvent, AuditRepository } from '../core/ports.ts';
import type { Database } from './database.ts';
import { NamedStatement, ph } from './named-statement.ts';
import { auditEvents } from './schema.ts';

function toEvent(row: typeof auditEvents.$inferSelect): AuditEvent {
  return {
    id: Number(row.id),
    workspaceId: row.workspaceId === null ? null : Number(row.workspaceId),
    occurredAt: row.occurredAt,
    actor: { type: row.actorType as Actor['type'], id: row.actorId, requestId: row.requestId },
    action: row.action,
    targetType: row.targetType,
    targetId: row.targetId,
    before: row.before,
    after: row.after,
  };
}

/** Every change of the API writes one event: its statement is built and planned once. */
const appendEvent = new NamedStatement(
  'wum_audit_append',
  () => sql`insert into audit_events
      (workspace_id, actor_type, actor_id, request_id, action, target_type, target_id, before, after)
    values (${ph('workspaceId')}, ${ph('actorType')}, ${ph('actorId')}, ${ph('requestId')}, ${ph('action')},
      ${ph('targetType')}, ${ph('targetId')}, ${ph('before')}::jsonb, ${ph('after')}::jsonb)`,
);

/** The audit trail repository over Drizzle. */
export function createAuditRepository(db: Database): AuditRepository {
  return {
    async append(entry) {
      await appendEvent.run(db, {
        workspaceId: entry.workspaceId ?? null,
        actorType: entry.actor.type,
        actorId: entry.actor.id ?? null,
        requestId: entry.actor.requestId ?? null,
        action: entry.action,
        targetType: entry.targetType,
        targetId: entry.targetId,
        before: entry.before === null || entry.before === undefined ? null : JSON.stringify(entry.before),
        after: entry.after === null || entry.after === undefined ? null : JSON.stringify(entry.after),
      });
    },

    async findPage(workspaceId, page) {
      const where = workspaceId === null ? undefined : eq(auditEvents.workspaceId, workspaceId);
      const [totalRow] = await db.select({ n: count() }).from(auditEvents).where(where);
      const rows = await db
        .select()
        .from(auditEvents)
        .where(where)
        .orderBy(asc(auditEvents.id))
        .limit(page.pageSize)
        .offset(pageOffset(page));
      return { rows: rows.map(toEvent), total: totalRow?.n ?? 0 };
    },
  };
}
