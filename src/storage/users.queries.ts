import { sql, type SQL } from 'drizzle-orm';
import type { PageRequest, Slice } from '../core/pagination.ts';
import { pageOffset } from '../core/pagination.ts';
import type { UserRepository } from '../core/users/user-repository.ts';
import type { AppRole, StoredUser, UserWrite } from '../core/users/user.ts';
import { foldEmail } from '../core/users/email.ts';
import type { Database } from './database.ts';
import { auditEventParams, auditInsert } from './audit.queries.ts';
import { eventInsert, toHandedOff } from './events.queries.ts';
import { NamedStatement, ph, ShapedStatements } from './named-statement.ts';
import { USER_COUNT_LEVEL_BITS } from './schema.ts';
import { conditionSql, indexRanges, orderSql } from './user-conditions.ts';
import type { RowWindow, UserCondition, UserSort } from '../core/users/user-query.ts';
import { isUuid } from './uuid.ts';
import { toWireApps } from '../core/users/wire-user.ts';
import { rowsOf } from './rows.ts';
import { inRequestTransaction } from './request-transaction.ts';
import { createUserBatches, type PendingAdd, type PendingWrite, type UserKeyKind } from './user-batches.queries.ts';
import {
  appsOf,
  appsParam,
  countChange,
  handOff,
  toUser,
  userColumnsOf,
  userEventInsert,
  wireUserJson,
  workspaceParam,
  writeParams,
  actorJson,
  type UserDeliverySink,
  type UserRow,
  type WrittenRow,
} from './user-sql.ts';

/*
 * The hot paths are written out in SQL so that each step costs one round trip: an add is one
 * data-modifying statement that checks its apps against the catalogue and inserts the user,
 * its apps, its count, its audit event and its outbox event together (the existing user is
 * read only when the email is taken); any other change of a user is one statement that writes
 * the user, the difference in its apps, its count, its audit event and its outbox event; a listing reads its exact total, and where its page
 * starts, from `user_counts` in the same snapshot as its rows. Each is a NamedStatement: its
 * text is built once, and PostgreSQL plans it once per connection. Every statement names
 * `workspace_id`.
 */

/**
 * How a reference names a user: by email (its ASCII letters folded, `foldEmail`; stored emails are
 * ASCII, so their lower() is that fold, and a key with another character matches none), by public
 * id, or by row id.
 */
const USER_KEYS = {
  email: sql`lower(users.email) = ${ph('key')}`,
  id: sql`users.public_id = ${ph('key')}::uuid`,
  row: sql`users.id = ${ph('key')}`,
} as const;

/** The user a key names, with its apps; one statement per kind of key. */
const findUser = Object.fromEntries(
  Object.entries(USER_KEYS).map(([kind, where]) => [
    kind,
    new NamedStatement(
      `wum_user_by_${kind}`,
      () => sql`select ${userColumnsOf('users')}, ${appsOf('users')} as apps from users
        where users.workspace_id = ${workspaceParam} and ${where}`,
    ),
  ]),
) as Record<keyof typeof USER_KEYS, NamedStatement>;

/** Locks the user row a key names until commit; its row id. */
const lockUser = Object.fromEntries(
  (['email', 'id'] as const).map((kind) => [
    kind,
    new NamedStatement(
      `wum_user_lock_by_${kind}`,
      () => sql`select users.id from users where users.workspace_id = ${workspaceParam} and ${USER_KEYS[kind]} for update`,
    ),
  ]),
) as Record<'email' | 'id', NamedStatement>;

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
      insert into user_apps (workspace_id, user_id, product, role, position, expires_at)
      select ${workspaceParam}, s.id, a.product, a.role, a.position - 1, a.expires_at
      from inserted s, ${appsParam}
    ),`;
    return sql`with ${withApps ? guard : sql``}
      inserted as (
        insert into users (workspace_id, public_id, email, role, first_name, last_name, status, external_id,
          scim_attributes, scim_deleted, expires_at)
        select ${workspaceParam}::int8, ${ph('publicId')}::uuid, ${ph('email')}::text, ${ph('role')}::text,
          ${ph('firstName')}::text, ${ph('lastName')}::text, ${ph('status')}::text, ${ph('externalId')}::text,
          ${ph('scimAttributes')}::jsonb, ${ph('scimDeleted')}::boolean, ${ph('expiresAt')}::timestamptz
        where ${withApps ? sql`(select ok from known)` : sql`true`}
        on conflict (workspace_id, lower(email)) do nothing
        returning ${userColumnsOf('users')}
      ),
      ${withApps ? apps : sql``}
      counted as (${countChange('inserted', sql`values (s.status, 1)`)}),
      audited as (${auditInsert('inserted')}),
      ${userEventInsert('inserted', undefined, true)}
      select *, ${handOff} from inserted`;
  });
}
const insertWithApps = insertStatement('wum_user_insert', true);
const insertWithoutApps = insertStatement('wum_user_insert_without_apps', false);

/**
 * Inserts a batch of new users (a bulk import's) in one statement, each unless its email is
 * taken: the users, their apps, their counts, one audit event and one outbox event each, as
 * {@link insertStatement} does for one. The apps were checked by the caller under share locks
 * of their products. Per-user values come as parallel arrays (`unnest`), the apps of each as
 * its JSON array as the API shows it, which the event's user reads too.
 */
const insertBatch = new NamedStatement(
  'wum_user_insert_batch',
  () => sql`with input as (
      select * from unnest(${ph('publicIds')}::uuid[], ${ph('emails')}::text[], ${ph('roles')}::text[], ${ph('firstNames')}::text[],
        ${ph('lastNames')}::text[], ${ph('statuses')}::text[], ${ph('expiries')}::timestamptz[], ${ph('appLists')}::jsonb[],
        ${ph('afters')}::jsonb[])
        with ordinality as i(public_id, email, role, first_name, last_name, status, expires_at, apps, after, ord)
    ),
    inserted as (
      insert into users (workspace_id, public_id, email, role, first_name, last_name, status, external_id,
        scim_attributes, scim_deleted, expires_at)
      select ${workspaceParam}::int8, i.public_id, i.email, i.role, i.first_name, i.last_name, i.status, null, null, false, i.expires_at
      from input i order by i.ord
      on conflict (workspace_id, lower(email)) do nothing
      returning ${userColumnsOf('users')}
    ),
    created as (
      select s.*, i.apps as wire_apps, i.after from inserted s join input i on i.public_id = s.public_id
    ),
    apps as (
      insert into user_apps (workspace_id, user_id, product, role, position, expires_at)
      select ${workspaceParam}, s.id, a.app->>'name', a.app->>'role', a.position - 1, (a.app->>'expires_at')::timestamptz
      from created s cross join lateral jsonb_array_elements(s.wire_apps) with ordinality as a(app, position)
    ),
    counted as (${countChange('created', sql`values (s.status, 1)`, sql`true`, true)}),
    audited as (${auditInsert('created', { targetId: sql`s.email`, userId: sql`s.public_id`, before: sql`null::jsonb`, after: sql`s.after` })}),
    ${eventInsert('created', {
      workspaceId: workspaceParam,
      type: ph('eventType'),
      user: wireUserJson(sql`s.wire_apps`),
      previous: sql`null`,
      actor: actorJson,
      many: true,
    })}
    select public_id from created`,
);

/**
 * Locks the users holding any of the folded emails, in id order (so two batches cannot
 * deadlock). Each email is looked up in a lateral subquery with `limit 1`, which the planner
 * cannot turn into a walk of the workspace: `lower(email) = any(…) order by id for update`
 * was planned, on statistics taken while the workspace was small, as a walk of every user in
 * id order, and an import job's batches slowed as its workspace grew (1,275 users/s at
 * 100,000 users; docs/performance.md, "Fast on data as it arrives"). Each found row is then
 * locked by key, in id order.
 */
const lockByEmails = new NamedStatement(
  'wum_users_lock_by_emails',
  () => sql`select l.id from (
      select f.id from unnest(${ph('keys')}::text[]) as k(email)
      cross join lateral (
        select users.id from users where users.workspace_id = ${workspaceParam} and lower(users.email) = k.email limit 1
      ) f
      order by f.id
    ) found
    cross join lateral (
      select users.id from users where users.workspace_id = ${workspaceParam} and users.id = found.id for update
    ) l`,
);

/**
 * Ends for good, in the statement that writes the user row `s` of CTE `updated`, the user's
 * console sessions when it is no longer an active owner (deactivated, demoted, deleted through
 * SCIM) or its email changed (docs/security.md, "Console sessions"). Ended, not suspended: a
 * reactivation, a promotion or a SCIM re-create later needs a new sign-in, and a recycled
 * email never inherits the previous person's session. Every change of a user goes through
 * this statement, so every deactivation, whatever its source, ends them.
 */
const endedSessions = sql`ended as (
      update console_sessions cs set ended_at = now()
      from updated s
      where cs.workspace_id = ${workspaceParam} and cs.user_id = ${ph('rowId')} and cs.ended_at is null
        and (s.status <> 'active' or s.role <> 'owner' or s.scim_deleted or s.email <> s.old_email)
    ),`;

/**
 * The roles user row `rowId` no longer holds deleted, the others upserted with their new
 * positions: two disjoint sets of rows, so one statement can do both.
 */
const replacedApps = sql`dropped as (
      delete from user_apps ua where ${ph('replaceApps')}::boolean
        and ua.workspace_id = ${workspaceParam} and ua.user_id = ${ph('rowId')}
        and (ua.product, ua.role) not in (select * from unnest(${ph('products')}::text[], ${ph('roles')}::text[]))
    ),
    placed as (
      insert into user_apps (workspace_id, user_id, product, role, position, expires_at)
      select ${workspaceParam}, ${ph('rowId')}, a.product, a.role, a.position - 1, a.expires_at
      from ${appsParam}
      where ${ph('replaceApps')}::boolean
      on conflict (workspace_id, user_id, product, role) do update set position = excluded.position, expires_at = excluded.expires_at
    ),`;

/** Which parts of {@link writeUserStatement} a write needs, besides the row, its audit event and its outbox event. */
interface WriteParts {
  /** The status changes: the counts move. */
  readonly counts: boolean;
  /** The apps change: roles dropped and placed. */
  readonly apps: boolean;
  /** The user was an owner or its email changes: its console sessions may have to end. */
  readonly sessions: boolean;
}

/**
 * Writes every attribute of user row `rowId`, one more version, its count if its status
 * changed, its apps if `replaceApps` (deleting the roles it no longer holds, upserting the
 * others with their new positions: two disjoint sets of rows, so one statement can do both),
 * its audit event and its outbox event, and ends the user's console sessions when it stops being
 * an active owner or changes its email ({@link endedSessions}). Returns the row as written. With `expectedVersion`
 * it writes nothing (and returns no row) unless the row is still at that version: an update
 * that waited for a concurrent writer's row lock re-checks its condition on the row as that
 * writer left it, so a change read without a lock cannot overwrite a newer one. Every change
 * of a user's apps goes through this statement and bumps the version, so the version also
 * stands for the apps.
 *
 * One statement per combination of `parts`: a part a write cannot need is left out of its
 * statement, not run empty, because PostgreSQL starts (and locks the tables and indexes of)
 * every part of a statement on each execution, which cost a first-name change a fifth of its
 * database time (docs/performance.md, "Writes against the plain SQL"). Each part left in keeps
 * its own condition, so a part included needlessly changes nothing.
 */
function writeUserStatement(name: string, parts: WriteParts): NamedStatement {
  return new NamedStatement(
    name,
    () => sql`with old as (
      select status, email from users where workspace_id = ${workspaceParam} and id = ${ph('rowId')}
    ),
    updated as (
      update users set email = ${ph('email')}, role = ${ph('role')}, first_name = ${ph('firstName')},
        last_name = ${ph('lastName')}, status = ${ph('status')}, external_id = ${ph('externalId')},
        scim_attributes = ${ph('scimAttributes')}::jsonb, scim_deleted = ${ph('scimDeleted')},
        expires_at = ${ph('expiresAt')}::timestamptz, version = users.version + 1, updated_at = now()
      from old where users.workspace_id = ${workspaceParam} and users.id = ${ph('rowId')}
        and (${ph('expectedVersion')}::int4 is null or users.version = ${ph('expectedVersion')}::int4)
      returning ${userColumnsOf('users')}, old.status as old_status, old.email as old_email
    ),
    ${parts.sessions ? endedSessions : sql``}
    ${parts.counts ? sql`moved as (${countChange('updated', sql`values (s.status, 1), (s.old_status, -1)`, sql`s.status <> s.old_status`)}),` : sql``}
    ${parts.apps ? replacedApps : sql``}
    audited as (${auditInsert('updated')}),
    ${userEventInsert('updated', undefined, true)}
    select ${userColumnsOf('updated')}, ${handOff} from updated`,
  );
}

/** Whether writing `user` over `current` may have to end console sessions ({@link endedSessions}). */
function writesSessions(current: StoredUser, user: UserWrite): boolean {
  // Only an active owner signs in (docs/security.md, "Console sessions"): a user who was no
  // owner has no session a change of it could have to end, unless its email changes.
  return current.role === 'owner' || current.email !== user.email;
}

/** Every variant of {@link writeUserStatement} by its name, built on first use. */
const writeUserStatements = new Map<string, NamedStatement>();

/**
 * The statement that writes `user` over `current`, which the caller read under the row's lock
 * or checks by version (so `current` is the row the statement changes, or it changes nothing).
 */
function writeUserFor(current: StoredUser, user: UserWrite, replaceApps: boolean): NamedStatement {
  const parts: WriteParts = {
    counts: current.status !== user.status,
    apps: replaceApps,
    sessions: writesSessions(current, user),
  };
  // One name per variant, e.g. `wum_user_write_cs` (counts and sessions), `wum_user_write` (neither part).
  const suffix = `${parts.counts ? 'c' : ''}${parts.apps ? 'a' : ''}${parts.sessions ? 's' : ''}`;
  const name = `wum_user_write${suffix ? `_${suffix}` : ''}`;
  let statement = writeUserStatements.get(name);
  if (!statement) writeUserStatements.set(name, (statement = writeUserStatement(name, parts)));
  return statement;
}

/** Active owners of a workspace (the partial index `users__active_owners`). */
const countActiveOwners = new NamedStatement(
  'wum_user_active_owners',
  () => sql`select count(*) as n from users
    where workspace_id = ${workspaceParam} and status = 'active' and role = 'owner'`,
);

/** The level of the counts that holds a workspace's total (one block). */
const TOP_LEVEL = USER_COUNT_LEVEL_BITS.length - 1;
/**
 * A page starting fewer than this many rows from the end it is read from walks the index from
 * that end, as plain `OFFSET` would: cheaper than going down the levels of counts. Deeper
 * pages go down the levels and walk at most 64 index entries (half a lowest-level block).
 */
const DIRECT_WALK_ROWS = 2_048;

/**
 * The total and the rows of one page, in one statement (one snapshot): `user_page_ids`
 * (migration 0007) reads the total from the top level of the counts and finds the page's ids
 * from the nearer end of the listing, going down the levels for a deep page (each level read
 * from the nearer end of its parent); only the page's own rows are then fetched, with their
 * apps. `status` is null for all users.
 *
 * Each row is fetched by its key in a lateral subquery with `limit 1`, which the planner cannot
 * flatten into a join: a join let it choose, on tables not analyzed yet (the function's 100
 * estimated rows against a few estimated users), to hash every user of the workspace and
 * aggregate the apps of each (50 ms instead of 2 at 3,000 users). Its only plan now is one
 * primary-key lookup per page row (docs/performance.md, "Fast on data as it arrives").
 */
const pageStatement = new NamedStatement(
  'wum_users_page',
  () => sql`with page as materialized (
      select * from user_page_ids(${workspaceParam}::int8, ${ph('status')}::text, ${ph('offset')}::int8, ${ph('pageSize')}::int8,
        ${sql.raw(String(DIRECT_WALK_ROWS))})
    )
    select (select total from page limit 1) as total, p.*
    from (select 1) as one
    left join lateral (
      select u.* from page cross join lateral (
        select ${userColumnsOf('users')}, ${appsOf('users')} as apps
        from users where users.workspace_id = ${workspaceParam} and users.id = page.id
        limit 1
      ) u
    ) p on true
    order by p.id`,
);

/**
 * The filtered listings' statements (their text is the filter's shape, their values parameters),
 * each prepared once per connection: a few dozen shapes cover every filter a client sends (SCIM's
 * `userName eq`, `q`, expiry and status filters, each sort).
 */
const filteredListings = new ShapedStatements(64);

/** Same apps, with the same expiries, in the same order. */
function sameApps(a: readonly AppRole[], b: readonly AppRole[]): boolean {
  const expiry = (app: AppRole) => app.expiresAt?.getTime() ?? null;
  return a.length === b.length && a.every((app, i) => app.name === b[i]!.name && app.role === b[i]!.role && expiry(app) === expiry(b[i]!));
}

/** The filtered listing: exact total and one window of rows in one statement (one snapshot). */
function matchingSql(workspaceId: number, where: SQL, total: SQL, order: SQL, outerOrder: SQL, limit: number, offset: number): SQL {
  return sql`select ${total}::int8 as total, p.*
    from (select 1) as one
    left join lateral (
      select ${userColumnsOf('u')}, ${appsOf('u', sql`${workspaceId}`)} as apps
      from users u where ${where}
      order by ${order} limit ${limit} offset ${offset}
    ) p on true
    order by ${outerOrder}`;
}

/**
 * The filtered listing through index ranges: the users in any of `ranges` (conditions each of
 * which is one range of a prefix index, see {@link indexRanges}) that satisfy `where` (the
 * whole filter, the ranges included) are the matches, a UNION of one range read per condition,
 * counted for the exact total; the window of them in `sort` order gets its apps. The ranges
 * are written as separate statements because as one `or` the planner, on tables not analyzed
 * yet (a prefix of a folded name estimated as selective as a status), read the workspace's
 * users through `(workspace_id, status)` and filtered them, instead of a BitmapOr of the three
 * prefix indexes (docs/performance.md, "Fast on data as it arrives"). In each, `where` is
 * wrapped in `coalesce(…, false)` (the same rows: WHERE drops null as it drops false), which
 * no index can serve: the range is then the only index condition of its statement, and its
 * own index the one that names most of it, whatever the statistics say.
 */
function searchSql(workspaceId: number, ranges: readonly UserCondition[], where: SQL, sort: UserSort, window: RowWindow): SQL {
  const branches = ranges.map(
    (range) => sql`select ${userColumnsOf('u')} from users u
      where u.workspace_id = ${workspaceId} and ${conditionSql(range)} and coalesce((${where}), false)`,
  );
  return sql`with matched as materialized (${sql.join(branches, sql` union `)})
    select (select count(*) from matched)::int8 as total, p.*
    from (select 1) as one
    left join lateral (
      select m.*, ${appsOf('m', sql`${workspaceId}`)} as apps from matched m
      order by ${orderSql(sort, 'm')} limit ${window.limit} offset ${window.offset}
    ) p on true
    order by ${orderSql(sort, 'p')}`;
}

/**
 * Records a notice about one user (users.queries: see {@link UserRepository.recordNotice}): the
 * mark, unless that user has it for that due instant already (its key), and only then the
 * audit entry and the event, whose `data` is the user as the API shows it with `reason` and
 * `ends_at`.
 */
const recordNotice = new NamedStatement(
  'wum_user_notice',
  () => sql`with marked as (
      insert into lifecycle_marks (workspace_id, user_id, kind, due_at)
      select u.workspace_id, u.id, ${ph('mark')}::text, ${ph('dueAt')}::timestamptz from users u
      where u.workspace_id = ${workspaceParam} and u.public_id = ${ph('userPublicId')}::uuid
      on conflict do nothing
      returning user_id
    ),
    noticed as (select u.* from users u join marked m on m.user_id = u.id where u.workspace_id = ${workspaceParam}),
    audited as (${auditInsert('noticed')}),
    ${userEventInsert('noticed', wireUserJson(appsOf('s')))}
    select count(*) as n from noticed`,
);

/** Options of {@link createUserRepository}. */
export interface UserRepositoryOptions {
  /**
   * Gather the concurrent adds ({@link UserRepository.insertIfAbsent}), changes
   * ({@link UserRepository.writeIfUnchanged}) and look-ups without a lock ({@link UserRepository.find})
   * of one workspace into batches (user-batches.queries.ts): only for a repository over the pool,
   * never one over a transaction, whose statements must run in it. One made while a request
   * transaction is open runs alone, in it.
   */
  readonly combineStatements?: boolean;
}

/**
 * The users repository. Every statement filters on `workspace_id`; look-ups by email use the
 * `(workspace_id, lower(email))` unique index, by id the `(workspace_id, public_id)` one; every
 * change of a user's existence or status changes `user_counts` in the same statement. Every
 * write of one user tells `deliveries` of the webhook deliveries it wrote.
 */
export function createUserRepository(db: Database, deliveries: UserDeliverySink, options: UserRepositoryOptions = {}): UserRepository {
  const list = async (query: SQL): Promise<UserRow[]> => rowsOf<UserRow>(await db.execute(query));
  /** Runs a write of one user with the lease its deliveries get, and hands them over. */
  const writeOne = async (workspaceId: number, statement: NamedStatement, values: Record<string, unknown>): Promise<UserRow | undefined> => {
    const leaseMs = deliveries.leaseMs();
    const [row] = await statement.run<WrittenRow>(db, { ...values, deliveryLeaseSecs: leaseMs / 1000 });
    if (leaseMs === 0) deliveries.due();
    else if (row?.handoff) deliveries.leased(toHandedOff(workspaceId, row.handoff));
    return row;
  };
  /** The users of row ids just locked, read in a second statement for the reason given in `find`. */
  const readLocked = async (workspaceId: number, locked: ReadonlyArray<{ id: number | string }>): Promise<StoredUser[]> => {
    if (locked.length === 0) return [];
    // One look-up by key per row (lateral, `limit 1`), whatever the statistics say: `u.id = any(…)`
    // was planned on a small workspace's statistics as a read of every user of the workspace.
    const rows = await list(sql`select u.* from unnest(${sql.param(locked.map((r) => Number(r.id)))}::int8[]) as k(id)
      cross join lateral (
        select ${userColumnsOf('u')}, ${appsOf('u', sql`${workspaceId}`)} as apps from users u
        where u.workspace_id = ${workspaceId} and u.id = k.id limit 1
      ) u
      order by u.id`);
    return rows.map((row) => toUser(row));
  };

  /** Writes one change of `writeIfUnchanged` in a statement of its own. */
  const writeAlone = async (workspaceId: number, { current, user, record }: PendingWrite): Promise<StoredUser | undefined> => {
    const row = await writeOne(workspaceId, writeUserFor(current, user, false), {
      ...writeParams(workspaceId, user, record),
      rowId: current.rowId,
      replaceApps: false,
      expectedVersion: current.version,
    });
    return row ? toUser(row, user.apps) : undefined;
  };
  /** Adds one user in a statement of its own. */
  const addAlone = async (workspaceId: number, { id, user, record }: PendingAdd): Promise<StoredUser | undefined> => {
    const values = { ...writeParams(workspaceId, user, record), publicId: id };
    const row = await writeOne(workspaceId, user.apps.length > 0 ? insertWithApps : insertWithoutApps, values);
    return row ? toUser(row, user.apps) : undefined;
  };
  /** Looks up one user, without a lock, in a statement of its own. */
  const findAlone = async (workspaceId: number, kind: UserKeyKind, key: string): Promise<StoredUser | undefined> => {
    const [row] = await findUser[kind].run<UserRow>(db, { workspaceId, key });
    return row ? toUser(row) : undefined;
  };
  const batches = options.combineStatements ? createUserBatches(db, deliveries, { change: writeAlone, add: addAlone, find: findAlone }) : undefined;
  /** The batches a statement may join now: none inside a request transaction, whose statements run in it. */
  const batchesNow = () => (inRequestTransaction() ? undefined : batches);

  return {
    async find(workspaceId, ref, options) {
      const kind = 'email' in ref ? 'email' : 'id';
      const key = 'email' in ref ? foldEmail(ref.email) : ref.id;
      if (kind === 'id' && !isUuid(key)) return undefined;
      if (!options?.lock) {
        const combined = batchesNow();
        return combined ? combined.find(workspaceId, kind, key) : findAlone(workspaceId, kind, key);
      }
      // Lock, then read in a second statement. Under READ COMMITTED a statement that waited
      // for the row lock sees the newest version of the locked row but user_apps as of its
      // own start: read together, the apps could predate the change it waited for (found by
      // test/reliability/races.test.ts on PostgreSQL).
      const [locked] = await lockUser[kind].run<{ id: number | string }>(db, { workspaceId, key });
      if (!locked) return undefined;
      const [row] = await findUser.row.run<UserRow>(db, { workspaceId, key: locked.id });
      return row ? toUser(row) : undefined;
    },

    async insertIfAbsent(workspaceId, id, user, record) {
      const add = { id, user, record };
      const combined = batchesNow();
      return combined ? combined.add(workspaceId, add) : addAlone(workspaceId, add);
    },

    async insertMany(workspaceId, batch) {
      const [first] = batch;
      if (!first) return new Set();
      const rows = await insertBatch.run<{ public_id: string }>(db, {
        ...auditEventParams({ ...first.record.audit, workspaceId }),
        workspaceId,
        eventType: first.record.eventType,
        publicIds: batch.map((b) => b.id),
        emails: batch.map((b) => b.user.email),
        roles: batch.map((b) => b.user.role),
        firstNames: batch.map((b) => b.user.firstName),
        lastNames: batch.map((b) => b.user.lastName),
        statuses: batch.map((b) => b.user.status),
        expiries: batch.map((b) => b.user.expiresAt?.toISOString() ?? null),
        appLists: batch.map((b) => JSON.stringify(toWireApps(b.user.apps))),
        afters: batch.map((b) => JSON.stringify(b.record.audit.after)),
      });
      return new Set(rows.map((r) => r.public_id));
    },

    async lockByEmails(workspaceId, emails) {
      if (emails.length === 0) return [];
      const locked = await lockByEmails.run<{ id: number | string }>(db, { workspaceId, keys: [...new Set(emails.map(foldEmail))] });
      return readLocked(workspaceId, locked);
    },

    async write(workspaceId, current, user, record) {
      const replaceApps = !sameApps(current.apps, user.apps);
      const row = await writeOne(workspaceId, writeUserFor(current, user, replaceApps), {
        ...writeParams(workspaceId, user, record),
        rowId: current.rowId,
        replaceApps,
        expectedVersion: null,
      });
      return toUser(row!, user.apps);
    },

    async writeIfUnchanged(workspaceId, current, user, record) {
      if (!sameApps(current.apps, user.apps)) throw new Error('writeIfUnchanged writes no apps: the apps must stay as they are');
      const write = { current, user, record };
      // A change that may end console sessions is written alone: a batch carries no sessions part.
      const combined = writesSessions(current, user) ? undefined : batchesNow();
      return combined ? combined.change(workspaceId, write) : writeAlone(workspaceId, write);
    },

    async countActiveOwners(workspaceId) {
      const [row] = await countActiveOwners.run<{ n: number | string }>(db, { workspaceId });
      return Number(row?.n ?? 0);
    },

    async findPage(workspaceId, status, page: PageRequest): Promise<Slice<StoredUser>> {
      const values = { workspaceId, status: status === 'all' ? null : status, offset: pageOffset(page), pageSize: page.pageSize };
      const found = await pageStatement.run<UserRow & { total: number | string }>(db, values);
      const total = Number(found[0]?.total ?? 0);
      return { rows: found.filter((r) => r.id !== null).map((r) => toUser(r)), total };
    },

    async findMatching(workspaceId, query, window) {
      const conditions = [sql`u.workspace_id = ${workspaceId}`];
      if (query.status !== 'all') conditions.push(sql`u.status = ${query.status}`);
      if (query.excludeScimDeleted) conditions.push(sql`not u.scim_deleted`);
      if (query.where) conditions.push(sql`(${conditionSql(query.where)})`);
      const sort = query.sort ?? 'created_at';
      const where = sql.join(conditions, sql` and `);
      // Only an order, no filter: the exact total is the sum of the kept counts, not a count(*).
      const totalSql =
        query.where || query.excludeScimDeleted
          ? sql`(select count(*) from users u where ${where})`
          : sql`(select coalesce(sum(c.user_count), 0) from user_counts c
              where c.workspace_id = ${workspaceId}${query.status === 'all' ? sql`` : sql` and c.status = ${query.status}`}
                and c.level = ${sql.raw(String(TOP_LEVEL))})`;
      const ranges = query.where && indexRanges(query.where);
      const found = await filteredListings.run<UserRow & { total: number | string }>(
        db,
        ranges
          ? searchSql(workspaceId, ranges, where, sort, window)
          : matchingSql(workspaceId, where, totalSql, orderSql(sort, 'u'), orderSql(sort, 'p'), window.limit, window.offset),
      );
      const total = Number(found[0]?.total ?? 0);
      return { rows: found.filter((r) => r.id !== null).map((r) => toUser(r)), total };
    },

    async lockMatching(workspaceId, condition) {
      const locked = await list(sql`select u.id from users u
        where u.workspace_id = ${workspaceId} and (${conditionSql(condition)})
        order by u.id for update`);
      return readLocked(workspaceId, locked);
    },

    async recordNotice(workspaceId, userId, notice) {
      if (!isUuid(userId)) return false;
      const [row] = await recordNotice.run<{ n: number | string }>(db, {
        ...auditEventParams({ ...notice.audit, workspaceId }),
        workspaceId,
        userPublicId: userId,
        mark: notice.mark,
        dueAt: notice.dueAt.toISOString(),
        eventType: notice.type,
        previous: null,
        extra: JSON.stringify({ reason: notice.reason, ends_at: notice.dueAt.toISOString() }),
      });
      return Number(row?.n ?? 0) > 0;
    },

    async recordActivity(workspaceId, reports) {
      if (reports.length === 0) return { updated: 0, unchanged: 0, unknown: [] };
      // The latest report of each email (any letter case), then one update of the rows it moves forward.
      const rows = await list(sql`with reports as (
          select lower(r.email) as key, max(r.at) as at
          from unnest(${sql.param(reports.map((r) => r.email))}::text[], ${sql.param(reports.map((r) => r.at.toISOString()))}::timestamptz[]) as r(email, at)
          group by lower(r.email)
        ),
        moved as (
          update users u set last_active_at = r.at from reports r
          where u.workspace_id = ${workspaceId} and lower(u.email) = r.key and (u.last_active_at is null or u.last_active_at < r.at)
          returning lower(u.email) as key
        )
        select r.key, exists (select 1 from users u where u.workspace_id = ${workspaceId} and lower(u.email) = r.key) as known,
          r.key in (select key from moved) as moved
        from reports r`) as unknown as Array<{ key: string; known: boolean; moved: boolean }>;
      const known = new Set(rows.filter((r) => r.known).map((r) => r.key));
      const updated = rows.filter((r) => r.moved).length;
      return {
        updated,
        unchanged: known.size - updated,
        unknown: [...new Set(reports.map((r) => r.email).filter((email) => !known.has(email.toLowerCase())))],
      };
    },
  };
}
