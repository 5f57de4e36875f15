import { asc, count, eq } from 'drizzle-orm';
import type { Actor } from '../core/actor.ts';
import { pageOffset } from '../core/pagination.ts';
import type { AuditEvent, AuditRepository } from '../core/ports.ts';
import type { Database } from './database.ts';
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

/** The audit trail repository over Drizzle. */
export function createAuditRepository(db: Database): AuditRepository {
  return {
    async append(entry) {
      // A named prepared statement: every change of the API writes one (see named-statement.ts).
      // `?? null` keeps its text fixed: an undefined column would be written as DEFAULT instead.
      await db
        .insert(auditEvents)
        .values({
          workspaceId: entry.workspaceId ?? null,
          actorType: entry.actor.type,
          actorId: entry.actor.id ?? null,
          requestId: entry.actor.requestId ?? null,
          action: entry.action,
          targetType: entry.targetType,
          targetId: entry.targetId,
          before: entry.before ?? null,
          after: entry.after ?? null,
        })
        .prepare('wum_audit_append')
        .execute();
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
