import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { PageRequest } from '../core/pagination.ts';
import { pageOffset } from '../core/pagination.ts';
import type { Slice, UserRepository } from '../core/ports.ts';
import type { AppRole, StoredUser, UserStatus, UserWrite, WorkspaceRole } from '../core/users/user.ts';
import type { Database } from './database.ts';
import { auditEventParams, auditInsert } from './audit.queries.ts';
import { NamedStatement, ph } from './named-statement.ts';
import { USER_COUNT_BLOCK_IDS, userApps } from './schema.ts';

/*
 * The hot paths are written out in SQL so that each step costs one round trip: an add is one
 * data-modifying statement that checks its apps against the catalogue and inserts the user,
 * its apps, its count and its audit event together (the existing user is read only when the
 * email is taken); a status change moves the count in the
 * statement that changes the status; a listing reads its exact total, and where its page
 * starts, from `user_counts` in the same snapshot as its rows. Each is a NamedStatement: its
 * text is built once, and PostgreSQL plans it once per connection. Every statement names
 * `workspace_id`.
 */

/**
 * Slots a block's count is spread over (`user_counts.slot` = user id modulo this): adds to one
 * workspace lock different count rows. Any value is correct, since a count is the sum
 * over all slots; changing it needs no migration.
 */
const COUNT_SLOTS = 16;

/** The workspace every statement is confined to. */
const workspaceParam = ph('workspaceId');

/** The apps of the user row of `table` as a JSON array, in the order they were given. */
function appsOf(table: string): SQL {
  return sql`coalesce((
    select json_agg(json_build_object('name', ua.product, 'role', ua.role) order by ua.position)
    from user_apps ua
    where ua.workspace_id = ${workspaceParam} and ua.user_id = ${sql.identifier(table)}.id
  ), '[]'::json)`;
}

/** The columns of a user row, of `table`, in the shape {@link toUser} reads. */
function userColumnsOf(table: string): SQL {
  const row = sql.identifier(table);
  return sql`${row}.id, ${row}.email, ${row}.role, ${row}.first_name, ${row}.last_name, ${row}.status,
    ${row}.created_at, ${row}.updated_at`;
}

/** A user row as either driver returns it: int8 as number or string, timestamps as text. */
interface UserRow {
  id: number | string;
  email: string;
  role: string;
  first_name: string;
  last_name: string;
  status: string;
  created_at: string | Date;
  updated_at: string | Date;
  apps?: AppRole[];
}

function toDate(value: string | Date): Date {
  return value instanceof Date ? value : new Date(value);
}

function toUser(row: UserRow, apps: readonly AppRole[] = row.apps ?? []): StoredUser {
  return {
    id: Number(row.id),
    email: row.email,
    role: row.role as WorkspaceRole,
    firstName: row.first_name,
    lastName: row.last_name,
    apps,
    status: row.status as UserStatus,
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
  };
}

/**
 * Adds each `(status, delta)` of `changes` (a VALUES list over the row `s` of CTE `source`) to
 * that user's count slot, for the rows where `when` holds. Count rows are taken in status
 * order, so two transactions moving users between the two statuses cannot deadlock.
 */
function countChange(source: string, changes: SQL, when: SQL = sql`true`): SQL {
  return sql`insert into user_counts (workspace_id, status, block, slot, user_count)
    select ${workspaceParam}, c.status, s.id / ${sql.raw(String(USER_COUNT_BLOCK_IDS))},
      (s.id % ${sql.raw(String(COUNT_SLOTS))})::smallint, c.delta
    from ${sql.identifier(source)} s cross join lateral (${changes}) as c(status, delta)
    where ${when}
    order by c.status
    on conflict (workspace_id, status, block, slot) do update set user_count = user_counts.user_count + excluded.user_count`;
}

/** The user of an email (any letter case), with its apps. */
const findByEmail = new NamedStatement(
  'wum_user_by_email',
  () => sql`select ${userColumnsOf('users')}, ${appsOf('users')} as apps from users
    where users.workspace_id = ${workspaceParam} and lower(users.email) = lower(${ph('email')})`,
);

/** Locks the user row of an email until commit; its id. */
const lockByEmail = new NamedStatement(
  'wum_user_lock_by_email',
  () => sql`select users.id from users
    where users.workspace_id = ${workspaceParam} and lower(users.email) = lower(${ph('email')}) for update`,
);

/** The user of an id, with its apps. */
const findById = new NamedStatement(
  'wum_user_by_id',
  () => sql`select ${userColumnsOf('users')}, ${appsOf('users')} as apps from users
    where users.workspace_id = ${workspaceParam} and users.id = ${ph('id')}`,
);

/**
 * Inserts a user unless its email is taken, with its apps (if `withApps`), its count and its
 * audit event, in one statement. With apps, it share-locks the products they name and inserts
 * nothing unless every product still has its role: the caller may have checked the apps
 * against a cached catalogue, and the lock keeps them valid until commit.
 */
function insertStatement(name: string, withApps: boolean): NamedStatement {
  return new NamedStatement(name, () => {
    const requested = sql`unnest(${ph('products')}::text[], ${ph('roles')}::text[])`;
    const guard = sql`locked as (
        select name, roles from products where name = any(${ph('products')}::text[]) for share
      ),
      known as (
        select count(*) = cardinality(${ph('products')}::text[]) as ok
        from ${requested} as a(product, role) join locked l on l.name = a.product and a.role = any(l.roles)
      ),`;
    const apps = sql`apps as (
      insert into user_apps (workspace_id, user_id, product, role, position)
      select ${workspaceParam}, s.id, a.product, a.role, a.position - 1
      from inserted s, ${requested} with ordinality as a(product, role, position)
    ),`;
    return sql`with ${withApps ? guard : sql``}
      inserted as (
        insert into users (workspace_id, email, role, first_name, last_name, status)
        select ${workspaceParam}::int8, ${ph('email')}::text, ${ph('role')}::text, ${ph('firstName')}::text,
          ${ph('lastName')}::text, ${ph('status')}::text
        where ${withApps ? sql`(select ok from known)` : sql`true`}
        on conflict (workspace_id, lower(email)) do nothing
        returning ${userColumnsOf('users')}
      ),
      ${withApps ? apps : sql``}
      counted as (${countChange('inserted', sql`values (s.status, 1)`)}),
      audited as (${auditInsert('inserted')})
      select * from inserted`;
  });
}
const insertWithApps = insertStatement('wum_user_insert', true);
const insertWithoutApps = insertStatement('wum_user_insert_without_apps', false);

/** Updates user `id` with `set` and moves its count if its status changed; the new row with its apps. */
function updateStatement(name: string, set: SQL): NamedStatement {
  return new NamedStatement(
    name,
    () => sql`with old as (
        select status from users where workspace_id = ${workspaceParam} and id = ${ph('id')}
      ),
      updated as (
        update users set ${set}, updated_at = now()
        from old where users.workspace_id = ${workspaceParam} and users.id = ${ph('id')}
        returning ${userColumnsOf('users')}, old.status as old_status
      ),
      moved as (${countChange('updated', sql`values (s.status, 1), (s.old_status, -1)`, sql`s.status <> s.old_status`)})
      select ${userColumnsOf('updated')}, ${appsOf('updated')} as apps from updated`,
  );
}
const replaceUser = updateStatement(
  'wum_user_replace',
  sql`role = ${ph('role')}, first_name = ${ph('firstName')}, last_name = ${ph('lastName')}, status = ${ph('status')}`,
);
const setUserStatus = updateStatement('wum_user_set_status', sql`status = ${ph('status')}`);

/** Active owners of a workspace (the partial index `users__active_owners`). */
const countActiveOwners = new NamedStatement(
  'wum_user_active_owners',
  () => sql`select count(*) as n from users
    where workspace_id = ${workspaceParam} and status = 'active' and role = 'owner'`,
);

/**
 * The total and the rows of one page, in one statement: the per-block counts give the total
 * and, by their running sum, the block holding the page's first row and how many rows of that
 * block come before it; the ids are then read from the `(workspace_id, status, id)` index (the
 * primary key for `all`) starting in that block, skipping at most one block's worth of index
 * entries however deep the page, and only the page's own rows are fetched, with their apps.
 */
function pageStatement(name: string, ofStatus: (alias: string) => SQL): NamedStatement {
  const offset = sql`${ph('offset')}::int8`;
  return new NamedStatement(
    name,
    () => sql`with blocks as (
        select c.block, sum(c.user_count)::int8 as n from user_counts c
        where c.workspace_id = ${workspaceParam}${ofStatus('c')}
        group by c.block
      ),
      placed as (
        select block, n, (sum(n) over (order by block))::int8 - n as before from blocks
      ),
      start as (
        select block, ${offset} - before as skip from placed
        where before <= ${offset} and ${offset} < before + n
      ),
      page_ids as (
        select u.id from users u
        where u.workspace_id = ${workspaceParam}${ofStatus('u')}
          and u.id >= (select block from start) * ${sql.raw(String(USER_COUNT_BLOCK_IDS))}
        order by u.id
        limit ${ph('pageSize')} offset (select skip from start)
      )
      select (select coalesce(sum(n), 0) from blocks)::int8 as total, p.*
      from (select 1) as one
      left join lateral (
        select ${userColumnsOf('users')}, ${appsOf('users')} as apps
        from page_ids join users on users.workspace_id = ${workspaceParam} and users.id = page_ids.id
      ) p on true
      order by p.id`,
  );
}
const pageOfAll = pageStatement('wum_users_page', () => sql``);
const pageOfStatus = pageStatement('wum_users_page_of_status', (alias) => sql` and ${sql.identifier(alias)}.status = ${ph('status')}`);

/**
 * The users repository. Every statement filters on `workspace_id`; look-ups by email use the
 * `(workspace_id, lower(email))` unique index; every change of a user's existence or status
 * changes `user_counts` in the same statement.
 */
export function createUserRepository(db: Database): UserRepository {
  async function writeApps(workspaceId: number, userId: number, apps: readonly AppRole[]): Promise<void> {
    if (apps.length === 0) return;
    await db.insert(userApps).values(
      apps.map((app, position) => ({ workspaceId, userId, product: app.name, role: app.role, position })),
    );
  }

  return {
    async findByEmail(workspaceId, email, options) {
      if (!options?.lock) {
        const [row] = await findByEmail.run<UserRow>(db, { workspaceId, email });
        return row ? toUser(row) : undefined;
      }
      // Lock, then read in a second statement. Under READ COMMITTED a statement that waited
      // for the row lock sees the newest version of the locked row but user_apps as of its
      // own start: read together, the apps could predate the change it waited for (found by
      // test/reliability/races.test.ts on PostgreSQL).
      const [locked] = await lockByEmail.run<{ id: number | string }>(db, { workspaceId, email });
      if (!locked) return undefined;
      const [row] = await findById.run<UserRow>(db, { workspaceId, id: locked.id });
      return row ? toUser(row) : undefined;
    },

    async insertIfAbsent(workspaceId, user: UserWrite, event) {
      const values = {
        ...auditEventParams({ ...event, workspaceId }),
        workspaceId,
        email: user.email,
        role: user.role,
        firstName: user.firstName,
        lastName: user.lastName,
        status: user.status,
        products: user.apps.map((a) => a.name),
        roles: user.apps.map((a) => a.role),
      };
      const [row] = await (user.apps.length > 0 ? insertWithApps : insertWithoutApps).run<UserRow>(db, values);
      return row ? toUser(row, user.apps) : undefined;
    },

    async replace(workspaceId, id, user) {
      const [row] = await replaceUser.run<UserRow>(db, {
        workspaceId,
        id,
        role: user.role,
        firstName: user.firstName,
        lastName: user.lastName,
        status: user.status,
      });
      await db.delete(userApps).where(and(eq(userApps.workspaceId, workspaceId), eq(userApps.userId, id)));
      await writeApps(workspaceId, id, user.apps);
      return toUser(row!, user.apps);
    },

    async setStatus(workspaceId, id, status) {
      const [row] = await setUserStatus.run<UserRow>(db, { workspaceId, id, status });
      return toUser(row!);
    },

    async countActiveOwners(workspaceId) {
      const [row] = await countActiveOwners.run<{ n: number | string }>(db, { workspaceId });
      return Number(row?.n ?? 0);
    },

    async findPage(workspaceId, status, page: PageRequest): Promise<Slice<StoredUser>> {
      const values = { workspaceId, status, offset: pageOffset(page), pageSize: page.pageSize };
      const rows = await (status === 'all' ? pageOfAll : pageOfStatus).run<UserRow & { total: number | string }>(db, values);
      const total = Number(rows[0]?.total ?? 0);
      return { rows: rows.filter((r) => r.id !== null).map((r) => toUser(r)), total };
    },
  };
}
