import { sql, type SQL } from 'drizzle-orm';
import type { PageRequest, Slice } from '../core/pagination.ts';
import { pageOffset } from '../core/pagination.ts';
import type { UserChangeRecord, UserRepository } from '../core/users/user-repository.ts';
import type { AppRole, ScimAttributes, StoredUser, UserStatus, UserWrite, WorkspaceRole } from '../core/users/user.ts';
import { foldEmail } from '../core/users/email.ts';
import type { Database } from './database.ts';
import { AUDIT_VALUE_TYPES, auditEventParams, auditInsert, auditValues, type AuditValue } from './audit.queries.ts';
import { eventInsert, handOffColumn, toHandedOff } from './events.queries.ts';
import { NamedStatement, ph, ShapedStatements } from './named-statement.ts';
import { USER_COUNT_LEVEL_BITS } from './schema.ts';
import { conditionSql, indexRanges, orderSql } from './user-conditions.ts';
import type { RowWindow, UserCondition, UserSort } from '../core/users/user-query.ts';
import { isUuid } from './uuid.ts';
import { toWireApps, WIRE_USER_FIELDS, type WireUserSource } from '../core/users/wire-user.ts';
import { rowsOf } from './rows.ts';
import { inRequestTransaction } from './request-transaction.ts';
import { WriteCombiner } from './write-combiner.ts';
import type { ClaimedDelivery } from '../core/webhooks/delivery-queue.ts';

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
 * Slots a block's count is spread over (`user_counts.slot` = user id modulo this): adds to one
 * workspace lock different count rows. Any value is correct, since a count is the sum
 * over all slots; changing it needs no migration.
 */
const COUNT_SLOTS = 4;

/** The workspace every statement is confined to. */
const workspaceParam = ph('workspaceId');

/** One app as the API shows it: `{name, role}`, and `expires_at` (RFC 3339) only on a grant that ends. */
function appJson(product: SQL, role: SQL, expiresAt: SQL): SQL {
  return sql`(jsonb_build_object('name', ${product}, 'role', ${role})
    || case when ${expiresAt} is null then '{}'::jsonb else jsonb_build_object('expires_at', ${isoTimestamp(expiresAt)}) end)`;
}

/** The apps of the user row of `table` as a JSON array, in the order they were given. */
function appsOf(table: string, workspace: SQL = sql`${workspaceParam}`): SQL {
  return sql`coalesce((
    select json_agg(${appJson(sql`ua.product`, sql`ua.role`, sql`ua.expires_at`)} order by ua.position)
    from user_apps ua
    where ua.workspace_id = ${workspace} and ua.user_id = ${sql.identifier(table)}.id
  ), '[]'::json)`;
}

/** The columns of a user row, of `table`, in the shape {@link toUser} reads. */
function userColumnsOf(table: string): SQL {
  const row = sql.identifier(table);
  return sql`${row}.id, ${row}.public_id, ${row}.email, ${row}.role, ${row}.first_name, ${row}.last_name, ${row}.status,
    ${row}.external_id, ${row}.scim_attributes, ${row}.scim_deleted, ${row}.version, ${row}.created_at, ${row}.updated_at,
    ${row}.expires_at, ${row}.last_active_at`;
}

/** A user row as either driver returns it: int8 as number or string, timestamps as text. */
interface UserRow {
  id: number | string;
  public_id: string;
  email: string;
  role: string;
  first_name: string;
  last_name: string;
  status: string;
  external_id: string | null;
  scim_attributes: ScimAttributes | string | null;
  scim_deleted: boolean;
  version: number | string;
  created_at: string | Date;
  updated_at: string | Date;
  expires_at: string | Date | null;
  last_active_at: string | Date | null;
  apps?: WireAppRow[];
}

/** An app as {@link appJson} writes it. */
interface WireAppRow {
  name: string;
  role: string;
  expires_at?: string;
}

/** Apps read back from JSON → domain apps. */
function toApps(apps: readonly WireAppRow[]): AppRole[] {
  return apps.map((a) => (a.expires_at ? { name: a.name, role: a.role, expiresAt: new Date(a.expires_at) } : { name: a.name, role: a.role }));
}

function toDate(value: string | Date): Date {
  return value instanceof Date ? value : new Date(value);
}

function toUser(row: UserRow, apps: readonly AppRole[] = toApps(row.apps ?? [])): StoredUser {
  return {
    rowId: Number(row.id),
    id: row.public_id,
    email: row.email,
    role: row.role as WorkspaceRole,
    firstName: row.first_name,
    lastName: row.last_name,
    apps,
    status: row.status as UserStatus,
    externalId: row.external_id,
    scimAttributes: typeof row.scim_attributes === 'string' ? (JSON.parse(row.scim_attributes) as ScimAttributes) : row.scim_attributes,
    scimDeleted: row.scim_deleted,
    version: Number(row.version),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    expiresAt: row.expires_at === null ? null : toDate(row.expires_at),
    lastActiveAt: row.last_active_at === null ? null : toDate(row.last_active_at),
  };
}

/** An instant as the API writes it: RFC 3339 in UTC with milliseconds, as `Date.toISOString()`. */
function isoTimestamp(column: SQL): SQL {
  return sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** The apps bound as `products[]`/`roles[]`/`appExpiries[]`, in order, as the API shows them. */
const appsParam = sql`unnest(${ph('products')}::text[], ${ph('roles')}::text[], ${ph('appExpiries')}::timestamptz[])
  with ordinality as a(product, role, expires_at, position)`;

/** The apps bound as {@link appsParam}, as the JSON array `[{name, role, expires_at?}]`. */
const appsParamJson = sql`(select coalesce(jsonb_agg(${appJson(sql`a.product`, sql`a.role`, sql`a.expires_at`)} order by a.position), '[]'::jsonb)
  from ${appsParam})`;

/** The column of the user row `s` behind each field of the wire user (`apps` comes apart). */
const WIRE_COLUMNS: Record<Exclude<WireUserSource, 'apps'>, SQL> = {
  id: sql`s.public_id`,
  email: sql`s.email`,
  role: sql`s.role`,
  firstName: sql`s.first_name`,
  lastName: sql`s.last_name`,
  status: sql`s.status`,
  createdAt: isoTimestamp(sql`s.created_at`),
  updatedAt: isoTimestamp(sql`s.updated_at`),
  expiresAt: isoTimestamp(sql`s.expires_at`),
  lastActiveAt: isoTimestamp(sql`s.last_active_at`),
};

/** The user row `s` as the API shows it (the wire user of core/users/wire-user.ts), with `apps` given. */
function wireUserJson(apps: SQL): SQL {
  const pairs = WIRE_USER_FIELDS.map(([wire, field]) => sql`${sql.raw(`'${wire}'`)}, ${field === 'apps' ? apps : WIRE_COLUMNS[field]}`);
  return sql`jsonb_build_object(${sql.join(pairs, sql`, `)})`;
}

/** The actor bound by {@link auditEventParams}, as the event shows it. */
const actorJson = sql`jsonb_build_object('type', ${ph('actorType')}::text, 'id', ${ph('actorId')}::text, 'label', ${ph('actorLabel')}::text)`;

/** The lease of the deliveries a write hands to this process's worker, in seconds (0: none). */
const leaseParam = ph('deliveryLeaseSecs');

/**
 * The outbox event (and its deliveries) of the change of the user row `s` of CTE `source`;
 * `handOff`: its deliveries written with the lease {@link leaseParam}, for {@link handOffColumn}.
 */
function userEventInsert(source: string, user: SQL = wireUserJson(appsParamJson), handOff = false): SQL {
  const lease = handOff ? { leaseSecs: leaseParam } : {};
  return eventInsert(source, { workspaceId: workspaceParam, type: ph('eventType'), user, previous: ph('previous'), actor: actorJson, extra: ph('extra'), ...lease });
}

/** The column `handoff` of a statement whose event was written by `userEventInsert(…, true)`. */
const handOff = sql`${handOffColumn(workspaceParam, leaseParam)} as handoff`;

/** The values of every statement that writes `user` with its change record. */
function writeParams(workspaceId: number, user: UserWrite, record: UserChangeRecord): Record<string, unknown> {
  return {
    ...auditEventParams({ ...record.audit, workspaceId }),
    workspaceId,
    email: user.email,
    role: user.role,
    firstName: user.firstName,
    lastName: user.lastName,
    status: user.status,
    externalId: user.externalId,
    scimAttributes: user.scimAttributes === null ? null : JSON.stringify(user.scimAttributes),
    scimDeleted: user.scimDeleted,
    products: user.apps.map((a) => a.name),
    roles: user.apps.map((a) => a.role),
    appExpiries: user.apps.map((a) => a.expiresAt?.toISOString() ?? null),
    expiresAt: user.expiresAt?.toISOString() ?? null,
    eventType: record.eventType,
    previous: record.previous === null ? null : JSON.stringify(record.previous),
    extra: record.reason ? JSON.stringify({ reason: record.reason }) : null,
  };
}

/** `(level, bits)` of every level of the counts, as a VALUES list (see USER_COUNT_LEVEL_BITS). */
const countLevels = sql.raw(`(values ${USER_COUNT_LEVEL_BITS.map((bits, level) => `(${level}::smallint, ${bits})`).join(', ')})`);

/**
 * Adds each `(status, delta)` of `changes` (a VALUES list over the row `s` of CTE `source`) to
 * that user's count slot at every level, for the rows where `when` holds. Count rows are taken
 * in key order (level, block, status, slot), so two transactions moving users between the two
 * statuses cannot deadlock.
 */
function countChange(source: string, changes: SQL, when: SQL = sql`true`, many = false): SQL {
  const slots = sql.raw(String(COUNT_SLOTS));
  const rows = sql`select c.status, l.level, s.id >> l.bits as block, (s.id % ${slots})::smallint as slot, c.delta
    from ${sql.identifier(source)} s cross join lateral (${changes}) as c(status, delta)
      cross join ${countLevels} as l(level, bits)
    where ${when}`;
  // Several users (a batch) share count rows: one upsert may touch each row once only, so their
  // deltas are summed first.
  const deltas = many ? sql`select status, level, block, slot, sum(delta)::int8 as delta from (${rows}) r group by status, level, block, slot` : rows;
  return sql`insert into user_counts (workspace_id, status, level, block, slot, user_count)
    select ${workspaceParam}, d.status, d.level, d.block, d.slot, d.delta from (${deltas}) d
    order by d.level, d.block, d.status, d.slot
    on conflict (workspace_id, status, level, block, slot) do update set user_count = user_counts.user_count + excluded.user_count`;
}

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

/** The audit values of a batch's change ({@link AUDIT_VALUE_TYPES}), by their names. */
const BATCH_AUDIT_VALUES = Object.keys(AUDIT_VALUE_TYPES) as AuditValue[];

/**
 * The columns of a user written in a batch ({@link writeBatchStatement}, {@link addBatchStatement}),
 * as `jsonb_to_recordset` reads them after each statement's own (its place `ord` first): every
 * attribute written, the apps as the API shows them (for the event, and an add's apps), the
 * event's values, and the audit entry's values under their own names ({@link batchUser} writes them).
 */
const BATCH_USER_COLUMNS = `email text, role text, first_name text, last_name text, status text, external_id text,
  scim_attributes jsonb, scim_deleted boolean, expires_at timestamptz, wire_apps jsonb, event_type text, previous jsonb,
  extra jsonb, ${BATCH_AUDIT_VALUES.map((name) => `"${name}" ${AUDIT_VALUE_TYPES[name]}`).join(', ')}`;

/** The batch's rows (`rows`, a JSON array) with `columns` of their own before {@link BATCH_USER_COLUMNS}. */
function batchInput(columns: string): SQL {
  return sql`input as (
      select * from jsonb_to_recordset(${ph('rows')}::jsonb) as i(${sql.raw(`ord int4, ${columns}, ${BATCH_USER_COLUMNS}`)})
    )`;
}

/**
 * The audit row, the event and its deliveries of each user of CTE `source` (a batch's users, each
 * with the columns of {@link BATCH_USER_COLUMNS}), then each user as written with its `ord` and
 * the deliveries it hands over: the end of a batch's statement.
 */
function batchRecords(source: string): SQL {
  return sql`audited as (${auditInsert(source, Object.fromEntries(BATCH_AUDIT_VALUES.map((name) => [name, sql`s.${sql.identifier(name)}`])))}),
    ${eventInsert(source, {
      workspaceId: workspaceParam,
      type: sql`s.event_type`,
      user: wireUserJson(sql`s.wire_apps`),
      previous: sql`s.previous`,
      actor: sql`jsonb_build_object('type', s."actorType", 'id', s."actorId", 'label', s."actorLabel")`,
      extra: sql`s.extra`,
      many: true,
      leaseSecs: leaseParam,
    })}
    select ${userColumnsOf('s')}, s.ord,
      ${handOffColumn(workspaceParam, leaseParam, sql`e.data->'user'->>'id' = s.public_id::text`)} as handoff
    from ${sql.identifier(source)} s`;
}

/**
 * Several changes of one workspace's users in one statement (the changes of concurrent requests
 * that a {@link WriteCombiner} gathered), each as {@link writeUserStatement} writes it with an
 * expected version and without apps or sessions: the user row, only while still at the version
 * its change was read at; its count if `counts` (the status changes); its audit event; its
 * outbox event, numbered in one bump of the workspace's sequence by their number; its
 * deliveries, with the lease `deliveryLeaseSecs`. The changes come as one JSON array
 * (`jsonb_to_recordset`), so the statement's text and its plan stay the same whatever the
 * batch's size (the success record's lesson, docs/performance.md "Webhooks"). Returns each row
 * written, with its change's `ord` and the deliveries it hands over; a change whose row had
 * moved on returns none.
 */
function writeBatchStatement(name: string, counts: boolean): NamedStatement {
  return new NamedStatement(
    name,
    () => sql`with ${batchInput('row_id int8, expected_version int4, old_status text')},
    updated as (
      update users set email = i.email, role = i.role, first_name = i.first_name, last_name = i.last_name, status = i.status,
        external_id = i.external_id, scim_attributes = i.scim_attributes, scim_deleted = i.scim_deleted,
        expires_at = i.expires_at, version = users.version + 1, updated_at = now()
      from input i
      where users.workspace_id = ${workspaceParam} and users.id = i.row_id and users.version = i.expected_version
      returning ${userColumnsOf('users')}, i.ord, i.old_status, i.wire_apps, i.event_type, i.previous, i.extra,
        ${sql.join(BATCH_AUDIT_VALUES.map((name) => sql`i.${sql.identifier(name)}`), sql`, `)}
    ),
    ${counts ? sql`moved as (${countChange('updated', sql`values (s.status, 1), (s.old_status, -1)`, sql`s.status <> s.old_status`, true)}),` : sql``}
    ${batchRecords('updated')}`,
  );
}
const writeBatch = writeBatchStatement('wum_user_write_batch', false);
const writeBatchWithCounts = writeBatchStatement('wum_user_write_batch_c', true);

/**
 * Several adds of one workspace in one statement (the adds of concurrent requests that a
 * {@link WriteCombiner} gathered), each as {@link insertStatement} adds one: the products the
 * batch names share-locked (in name order), and a user inserted only if every app of it names a
 * product that still has its role and its email is not taken; its apps, its count, its audit
 * event, its outbox event and its deliveries. Returns each user added, with its `ord` and the
 * deliveries it hands over; an add refused (email taken, a role gone) returns none.
 */
const addBatch = new NamedStatement(
  'wum_user_add_batch',
  () => sql`with ${batchInput('public_id uuid')},
    requested as (
      select i.ord, a.app->>'name' as product, a.app->>'role' as role
      from input i cross join lateral jsonb_array_elements(i.wire_apps) as a(app)
    ),
    locked as (
      select name, roles from products where name in (select product from requested) order by name for share
    ),
    inserted as (
      insert into users (workspace_id, public_id, email, role, first_name, last_name, status, external_id,
        scim_attributes, scim_deleted, expires_at)
      select ${workspaceParam}::int8, i.public_id, i.email, i.role, i.first_name, i.last_name, i.status, i.external_id,
        i.scim_attributes, i.scim_deleted, i.expires_at
      from input i
      where not exists (
        select 1 from requested r where r.ord = i.ord
          and not exists (select 1 from locked l where l.name = r.product and r.role = any(l.roles))
      )
      order by i.ord
      on conflict (workspace_id, lower(email)) do nothing
      returning ${userColumnsOf('users')}
    ),
    created as (
      select s.*, i.ord, i.wire_apps, i.event_type, i.previous, i.extra,
        ${sql.join(BATCH_AUDIT_VALUES.map((name) => sql`i.${sql.identifier(name)}`), sql`, `)}
      from inserted s join input i on i.public_id = s.public_id
    ),
    apps as (
      insert into user_apps (workspace_id, user_id, product, role, position, expires_at)
      select ${workspaceParam}, s.id, a.app->>'name', a.app->>'role', a.position - 1, (a.app->>'expires_at')::timestamptz
      from created s cross join lateral jsonb_array_elements(s.wire_apps) with ordinality as a(app, position)
    ),
    counted as (${countChange('created', sql`values (s.status, 1)`, sql`true`, true)}),
    ${batchRecords('created')}`,
);

/** A change {@link UserRepository.writeIfUnchanged} was asked for, waiting for its batch. */
interface PendingWrite {
  readonly current: StoredUser;
  readonly user: UserWrite;
  readonly record: UserChangeRecord;
}

/** `user` written in a batch with its change record, as {@link BATCH_USER_COLUMNS} reads it. */
function batchUser(user: UserWrite, record: UserChangeRecord): Record<string, unknown> {
  return {
    email: user.email,
    role: user.role,
    first_name: user.firstName,
    last_name: user.lastName,
    status: user.status,
    external_id: user.externalId,
    scim_attributes: user.scimAttributes,
    scim_deleted: user.scimDeleted,
    expires_at: user.expiresAt?.toISOString() ?? null,
    wire_apps: toWireApps(user.apps),
    event_type: record.eventType,
    previous: record.previous,
    extra: record.reason ? { reason: record.reason } : null,
    ...auditValues(record.audit),
  };
}

/** An add {@link UserRepository.insertIfAbsent} was asked for, waiting for its batch. */
interface PendingAdd {
  readonly id: string;
  readonly user: UserWrite;
  readonly record: UserChangeRecord;
}

/**
 * Most batches of one workspace's changes (or adds) running at once: one. Measured on two cores against
 * two and three (docs/performance.md, "Several changes in one statement"): the fewer run at once,
 * the more changes each carries, and the less the server and the database spend per change.
 * Other workspaces' batches run beside it.
 */
const BATCHES_IN_FLIGHT = 1;
/** Most changes (or adds) in one batch. */
const BATCH_SIZE = 32;

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

/**
 * Where a user repository's writes of one user tell of the webhook deliveries they wrote
 * (docs/contract.md Part B, Events and webhooks): each write asks for the lease, in ms, with
 * which to write them for this process's worker, then hands the deliveries it wrote leased
 * over, or says that it wrote them due (a lease of 0), for any worker's claim.
 */
export interface UserDeliverySink {
  /** The lease for the next write's deliveries, in ms; 0: written due. */
  leaseMs(): number;
  /** Deliveries a write wrote leased (committed, or to be with the write's transaction). */
  leased(deliveries: readonly ClaimedDelivery[]): void;
  /** A write wrote its deliveries (if any) due. */
  due(): void;
}

/** A row of a write of one user, with the deliveries it hands over. */
type WrittenRow = UserRow & { handoff?: unknown };

/** Options of {@link createUserRepository}. */
export interface UserRepositoryOptions {
  /**
   * Gather the concurrent changes of {@link UserRepository.writeIfUnchanged} of one workspace
   * into batches ({@link WriteCombiner}): only for a repository over the pool, never one over a
   * transaction, whose statements must run in it. A change made while a request transaction is
   * open is written alone, in it.
   */
  readonly combineWrites?: boolean;
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
  /**
   * Runs a batch's statement with `rows` (each with its `ord`, its place in the batch) and the
   * lease its deliveries get, hands each row's deliveries over, and returns the users it wrote
   * by their place (`apps`: the apps of each).
   */
  const together = async (
    workspaceId: number,
    statement: NamedStatement,
    rows: ReadonlyArray<Record<string, unknown>>,
    apps: ReadonlyArray<readonly AppRole[]>,
  ): Promise<Array<StoredUser | undefined>> => {
    const leaseMs = deliveries.leaseMs();
    const found = await statement.run<WrittenRow & { ord: number | string }>(db, {
      workspaceId,
      deliveryLeaseSecs: leaseMs / 1000,
      rows: JSON.stringify(rows),
    });
    if (leaseMs === 0) deliveries.due();
    const written = new Map(found.map((row) => [Number(row.ord), row]));
    return apps.map((userApps, ord) => {
      const row = written.get(ord);
      if (!row) return undefined;
      if (row.handoff) deliveries.leased(toHandedOff(workspaceId, row.handoff));
      return toUser(row, userApps);
    });
  };
  /**
   * A batch: alone in its own statement, else together; a batch the database refuses as a whole
   * (a deadlock with another process's batch, a row a constraint refuses) is written one by one,
   * so each gets its own outcome, as it would have alone.
   */
  const settle = async <W>(
    writes: readonly W[],
    alone: (write: W) => Promise<StoredUser | undefined>,
    all: (writes: readonly W[]) => Promise<Array<StoredUser | undefined>>,
  ): Promise<Array<PromiseSettledResult<StoredUser | undefined>>> => {
    const oneByOne = () => Promise.allSettled(writes.map(alone));
    if (writes.length === 1) return oneByOne();
    try {
      return (await all(writes)).map((value) => ({ status: 'fulfilled' as const, value }));
    } catch {
      return oneByOne();
    }
  };
  type Lane<W> = W & { readonly workspaceId: number };
  /** A combiner of one kind of write; `run` writes a batch, all of the batch's workspace. */
  const combinerOf = <W>(identity: (write: W) => unknown, run: (workspaceId: number, writes: readonly W[]) => ReturnType<typeof settle<W>>) =>
    options.combineWrites
      ? new WriteCombiner<Lane<W>, StoredUser | undefined>({
          maxInFlight: BATCHES_IN_FLIGHT,
          maxBatch: BATCH_SIZE,
          identity,
          // A lane is one workspace (and one statement): every write of a batch has the lane's.
          run: (writes) => run(writes[0]!.workspaceId, writes),
        })
      : undefined;
  const changes = combinerOf<PendingWrite & { readonly counts: boolean }>(
    (write) => write.current.rowId,
    (workspaceId, writes) =>
      settle(
        writes,
        (write) => writeAlone(workspaceId, write),
        (all) =>
          together(
            workspaceId,
            all[0]!.counts ? writeBatchWithCounts : writeBatch,
            all.map(({ current, user, record }, ord) => ({
              ord,
              row_id: current.rowId,
              expected_version: current.version,
              old_status: current.status,
              ...batchUser(user, record),
            })),
            all.map((write) => write.user.apps),
          ),
      ),
  );
  /** Adds one user in a statement of its own. */
  const addAlone = async (workspaceId: number, { id, user, record }: PendingAdd): Promise<StoredUser | undefined> => {
    const values = { ...writeParams(workspaceId, user, record), publicId: id };
    const row = await writeOne(workspaceId, user.apps.length > 0 ? insertWithApps : insertWithoutApps, values);
    return row ? toUser(row, user.apps) : undefined;
  };
  const adds = combinerOf<PendingAdd>(
    (add) => foldEmail(add.user.email),
    (workspaceId, batch) =>
      settle(
        batch,
        (add) => addAlone(workspaceId, add),
        (all) =>
          together(
            workspaceId,
            addBatch,
            all.map(({ id, user, record }, ord) => ({ ord, public_id: id, ...batchUser(user, record) })),
            all.map((add) => add.user.apps),
          ),
      ),
  );

  return {
    async find(workspaceId, ref, options) {
      const kind = 'email' in ref ? 'email' : 'id';
      const key = 'email' in ref ? foldEmail(ref.email) : ref.id;
      if (kind === 'id' && !isUuid(key)) return undefined;
      if (!options?.lock) {
        const [row] = await findUser[kind].run<UserRow>(db, { workspaceId, key });
        return row ? toUser(row) : undefined;
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
      if (!adds || inRequestTransaction()) return addAlone(workspaceId, add);
      return adds.submit(`${workspaceId}:adds`, { ...add, workspaceId });
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
      // A change that may end console sessions is written alone: the batch carries no sessions part.
      if (!changes || writesSessions(current, user) || inRequestTransaction()) return writeAlone(workspaceId, write);
      const counts = current.status !== user.status;
      return changes.submit(`${workspaceId}${counts ? ':counts' : ''}`, { ...write, workspaceId, counts });
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
