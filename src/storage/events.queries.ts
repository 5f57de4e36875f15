import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { WorkspaceEvent } from '../core/events/event.ts';
import type { EventRepository } from '../core/ports.ts';
import type { UserChangeType } from '../core/users/user.ts';
import type { Database } from './database.ts';
import { events, workspaces } from './schema.ts';

/** An outbox row joined with its workspace's subdomain → the domain event. */
export function toWorkspaceEvent(row: {
  id: string;
  type: string;
  sequence: number | string;
  createdAt: Date | string;
  subdomain: string;
  data: unknown;
}): WorkspaceEvent {
  return {
    id: row.id,
    type: row.type as UserChangeType,
    sequence: Number(row.sequence),
    createdAt: row.createdAt instanceof Date ? row.createdAt : new Date(row.createdAt),
    subdomain: row.subdomain,
    data: typeof row.data === 'string' ? JSON.parse(row.data) : row.data,
  };
}

/** The events repository over Drizzle: reads of the outbox, by workspace and sequence. */
export function createEventRepository(db: Database): EventRepository {
  return {
    async findAfter(workspaceId, after, limit) {
      const rows = await db
        .select({
          id: events.id,
          type: events.type,
          sequence: events.sequence,
          createdAt: events.createdAt,
          subdomain: workspaces.subdomain,
          data: events.data,
        })
        .from(events)
        .innerJoin(workspaces, eq(workspaces.id, events.workspaceId))
        .where(and(eq(events.workspaceId, workspaceId), gt(events.sequence, after)))
        .orderBy(asc(events.sequence))
        .limit(limit);
      return rows.map(toWorkspaceEvent);
    },
  };
}

/**
 * Deletes up to `batchSize` events created more than `retentionDays` days ago (and, by
 * cascade, their webhook deliveries), oldest first, and returns how many it deleted. One short
 * statement per batch: it touches only old rows, which no writer appends to, and `SKIP LOCKED`
 * passes over any a concurrent pruner holds. Source: docs/contract.md Part B, Events ("kept 30 days").
 */
export async function pruneEvents(db: Database, retentionDays: number, batchSize: number): Promise<number> {
  const result = await db.execute(sql`delete from events where (workspace_id, sequence) in (
      select workspace_id, sequence from events
      where created_at < now() - make_interval(days => ${retentionDays}::int)
      order by created_at limit ${batchSize}::int for update skip locked
    )`);
  return rowCount(result);
}

/** Affected rows of a statement, as either driver reports them. */
export function rowCount(result: unknown): number {
  const r = result as { rowCount?: number | null; affectedRows?: number };
  return Number(r.rowCount ?? r.affectedRows ?? 0);
}
