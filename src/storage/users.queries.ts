import { and, asc, count, eq, sql, type SQL } from 'drizzle-orm';
import type { PageRequest } from '../core/pagination.ts';
import { pageOffset } from '../core/pagination.ts';
import type { Slice, UserRepository } from '../core/ports.ts';
import type { AppRole, StatusFilter, StoredUser, UserStatus, UserWrite, WorkspaceRole } from '../core/users/user.ts';
import type { Database } from './database.ts';
import { userApps, users } from './schema.ts';

/** The user's apps as a JSON array in the order they were given, computed in the same query. */
const appsOfUser = sql<AppRole[]>`coalesce((
  select json_agg(json_build_object('name', ${userApps.product}, 'role', ${userApps.role}) order by ${userApps.position})
  from ${userApps}
  where ${userApps.workspaceId} = ${users.workspaceId} and ${userApps.userId} = ${users.id}
), '[]'::json)`;

const userColumns = {
  id: users.id,
  email: users.email,
  role: users.role,
  firstName: users.firstName,
  lastName: users.lastName,
  status: users.status,
  createdAt: users.createdAt,
  updatedAt: users.updatedAt,
  apps: appsOfUser,
};

type UserRow = Omit<StoredUser, 'role' | 'status' | 'apps'> & { role: string; status: string; apps: AppRole[] };

function toUser(row: UserRow): StoredUser {
  return {
    ...row,
    id: Number(row.id),
    role: row.role as WorkspaceRole,
    status: row.status as UserStatus,
  };
}

function sameEmail(email: string): SQL {
  return sql`lower(${users.email}) = lower(${email})`;
}

function statusCondition(workspaceId: number, status: StatusFilter): SQL | undefined {
  return status === 'all'
    ? eq(users.workspaceId, workspaceId)
    : and(eq(users.workspaceId, workspaceId), eq(users.status, status));
}

/**
 * The users repository over Drizzle. Every statement filters on `workspace_id`; look-ups by
 * email use the `(workspace_id, lower(email))` unique index.
 */
export function createUserRepository(db: Database): UserRepository {
  async function writeApps(workspaceId: number, userId: number, apps: readonly AppRole[]): Promise<void> {
    if (apps.length === 0) return;
    await db.insert(userApps).values(
      apps.map((app, position) => ({ workspaceId, userId, product: app.name, role: app.role, position })),
    );
  }

  async function findById(workspaceId: number, id: number): Promise<StoredUser> {
    const [row] = await db
      .select(userColumns)
      .from(users)
      .where(and(eq(users.workspaceId, workspaceId), eq(users.id, id)));
    return toUser(row as UserRow);
  }

  return {
    async findByEmail(workspaceId, email, options) {
      const query = db
        .select(userColumns)
        .from(users)
        .where(and(eq(users.workspaceId, workspaceId), sameEmail(email)));
      const [row] = options?.lock ? await query.for('update', { of: users }) : await query;
      return row ? toUser(row as UserRow) : undefined;
    },

    async insert(workspaceId, user: UserWrite) {
      const [row] = await db
        .insert(users)
        .values({
          workspaceId,
          email: user.email,
          role: user.role,
          firstName: user.firstName,
          lastName: user.lastName,
          status: user.status,
        })
        .returning({ id: users.id });
      const id = Number(row!.id);
      await writeApps(workspaceId, id, user.apps);
      return findById(workspaceId, id);
    },

    async replace(workspaceId, id, user) {
      await db
        .update(users)
        .set({
          role: user.role,
          firstName: user.firstName,
          lastName: user.lastName,
          status: user.status,
          updatedAt: sql`now()`,
        })
        .where(and(eq(users.workspaceId, workspaceId), eq(users.id, id)));
      await db.delete(userApps).where(and(eq(userApps.workspaceId, workspaceId), eq(userApps.userId, id)));
      await writeApps(workspaceId, id, user.apps);
      return findById(workspaceId, id);
    },

    async setStatus(workspaceId, id, status) {
      const [row] = await db
        .update(users)
        .set({ status, updatedAt: sql`now()` })
        .where(and(eq(users.workspaceId, workspaceId), eq(users.id, id)))
        .returning(userColumns);
      return toUser(row as UserRow);
    },

    async countActiveOwners(workspaceId) {
      const [row] = await db
        .select({ n: count() })
        .from(users)
        .where(and(eq(users.workspaceId, workspaceId), eq(users.status, 'active'), eq(users.role, 'owner')));
      return row?.n ?? 0;
    },

    async findPage(workspaceId, status, page: PageRequest): Promise<Slice<StoredUser>> {
      const where = statusCondition(workspaceId, status);
      const [totalRow] = await db.select({ n: count() }).from(users).where(where);
      const total = totalRow?.n ?? 0;
      const offset = pageOffset(page);
      if (offset >= total) return { rows: [], total };
      const rows = await db
        .select(userColumns)
        .from(users)
        .where(where)
        .orderBy(asc(users.id))
        .limit(page.pageSize)
        .offset(offset);
      return { rows: rows.map((r) => toUser(r as UserRow)), total };
    },
  };
}
