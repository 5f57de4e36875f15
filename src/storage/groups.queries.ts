import { and, asc, eq, sql } from 'drizzle-orm';
import type { Group } from '../core/groups/group.ts';
import type { GroupRepository } from '../core/groups/group-repository.ts';
import type { Database } from './database.ts';
import { scimGroups } from './schema.ts';
import { isUuid } from './uuid.ts';

function toGroup(row: typeof scimGroups.$inferSelect): Group {
  return {
    id: row.id,
    product: row.product,
    role: row.role,
    externalId: row.externalId,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/**
 * The SCIM groups repository over Drizzle: every statement filters on `workspace_id`; a
 * second link of one role violates `scim_groups__workspace_role` (mapped to `group_exists`).
 */
export function createGroupRepository(db: Database): GroupRepository {
  const byId = (workspaceId: number, id: string) => and(eq(scimGroups.workspaceId, workspaceId), eq(scimGroups.id, id.toLowerCase()));
  return {
    async insert(workspaceId, group) {
      const [row] = await db
        .insert(scimGroups)
        .values({ workspaceId, id: group.id, product: group.product, role: group.role, externalId: group.externalId })
        .returning();
      return toGroup(row!);
    },

    async find(workspaceId, id, options) {
      if (!isUuid(id)) return undefined;
      const query = db.select().from(scimGroups).where(byId(workspaceId, id));
      const [row] = options?.lock ? await query.for('update') : await query;
      return row ? toGroup(row) : undefined;
    },

    async findAll(workspaceId) {
      const rows = await db
        .select()
        .from(scimGroups)
        .where(eq(scimGroups.workspaceId, workspaceId))
        .orderBy(asc(scimGroups.createdAt), asc(scimGroups.id));
      return rows.map(toGroup);
    },

    async update(workspaceId, id, changes) {
      const [row] = await db
        .update(scimGroups)
        .set({ externalId: changes.externalId, updatedAt: sql`now()` })
        .where(byId(workspaceId, id))
        .returning();
      return toGroup(row!);
    },

    async delete(workspaceId, id) {
      await db.delete(scimGroups).where(byId(workspaceId, id));
    },
  };
}
