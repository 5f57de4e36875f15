import { asc, count, eq, inArray, sql } from 'drizzle-orm';
import { pageOffset } from '../core/pagination.ts';
import type { Workspace, WorkspaceRepository } from '../core/workspaces/workspace-repository.ts';
import type { Database } from './database.ts';
import { workspaces } from './schema.ts';

function toWorkspace(row: typeof workspaces.$inferSelect): Workspace {
  return { id: Number(row.id), subdomain: row.subdomain, name: row.name, createdAt: row.createdAt };
}

/** The workspaces repository over Drizzle. */
export function createWorkspaceRepository(db: Database): WorkspaceRepository {
  return {
    async insert(subdomain, name) {
      const [row] = await db.insert(workspaces).values({ subdomain, name }).returning();
      return toWorkspace(row!);
    },

    async findBySubdomain(subdomain) {
      const [row] = await db.select().from(workspaces).where(eq(workspaces.subdomain, subdomain));
      return row ? toWorkspace(row) : undefined;
    },

    async findSubdomains(ids) {
      if (ids.length === 0) return new Map();
      const rows = await db.select({ id: workspaces.id, subdomain: workspaces.subdomain }).from(workspaces).where(inArray(workspaces.id, [...new Set(ids)]));
      return new Map(rows.map((row) => [Number(row.id), row.subdomain]));
    },

    async findPage(page) {
      const [totalRow] = await db.select({ n: count() }).from(workspaces);
      const rows = await db
        .select()
        .from(workspaces)
        .orderBy(asc(workspaces.id))
        .limit(page.pageSize)
        .offset(pageOffset(page));
      return { rows: rows.map(toWorkspace), total: totalRow?.n ?? 0 };
    },

    async delete(id) {
      await db.delete(workspaces).where(eq(workspaces.id, id));
    },

    async lock(id) {
      // NO KEY UPDATE: it serialises owner checks (and conflicts with the event sequence bump)
      // but not the key-share locks of the foreign keys of users being added meanwhile.
      await db.execute(sql`select 1 from ${workspaces} where ${workspaces.id} = ${id} for no key update`);
    },
  };
}
