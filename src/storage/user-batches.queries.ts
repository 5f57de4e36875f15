import { sql, type SQL } from 'drizzle-orm';
import { foldEmail } from '../core/users/email.ts';
import type { UserChangeRecord } from '../core/users/user-repository.ts';
import type { AppRole, StoredUser, UserWrite } from '../core/users/user.ts';
import { toWireApps } from '../core/users/wire-user.ts';
import { AUDIT_VALUE_TYPES, auditInsert, auditValues, type AuditValue } from './audit.queries.ts';
import type { Database } from './database.ts';
import { eventInsert, handOffColumn, toHandedOff } from './events.queries.ts';
import { NamedStatement, ph } from './named-statement.ts';
import { appsOf, countChange, leaseParam, toUser, userColumnsOf, wireUserJson, workspaceParam, type UserDeliverySink, type UserRow, type WrittenRow } from './user-sql.ts';
import { StatementCombiner } from './statement-combiner.ts';

/*
 * Writes and reads of several users of one workspace in one statement: the concurrent adds,
 * changes and look-ups of different requests that a StatementCombiner gathered while a batch of
 * their workspace ran, each done as its single statement in users.queries.ts does it
 * (docs/architecture.md, "Changes written together").
 */

/** The audit values of a batch's change ({@link AUDIT_VALUE_TYPES}), by their names. */
const BATCH_AUDIT_VALUES = Object.keys(AUDIT_VALUE_TYPES) as AuditValue[];

/**
 * The columns of a user written in a batch ({@link writeBatchStatement}, {@link addBatch}),
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
 * The columns of the batch's input row `i` that a written user's row carries on to
 * {@link batchRecords}: its place, its apps as the API shows them, its event's values and its
 * audit entry's values.
 */
const CARRIED_INPUT = sql`i.ord, i.wire_apps, i.event_type, i.previous, i.extra,
  ${sql.join(BATCH_AUDIT_VALUES.map((name) => sql`i.${sql.identifier(name)}`), sql`, `)}`;

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
 * that a {@link StatementCombiner} gathered), each as {@link writeUserStatement} writes it with an
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
      returning ${userColumnsOf('users')}, i.old_status, ${CARRIED_INPUT}
    ),
    ${counts ? sql`moved as (${countChange('updated', sql`values (s.status, 1), (s.old_status, -1)`, sql`s.status <> s.old_status`, true)}),` : sql``}
    ${batchRecords('updated')}`,
  );
}
const writeBatch = writeBatchStatement('wum_user_write_batch', false);
const writeBatchWithCounts = writeBatchStatement('wum_user_write_batch_c', true);

/**
 * Several adds of one workspace in one statement (the adds of concurrent requests that a
 * {@link StatementCombiner} gathered), each as {@link insertStatement} adds one: the products the
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
      select s.*, ${CARRIED_INPUT}
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
export interface PendingWrite {
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
export interface PendingAdd {
  readonly id: string;
  readonly user: UserWrite;
  readonly record: UserChangeRecord;
}

/**
 * Most batches of one workspace's changes (or adds, or look-ups) running at once: one. Measured on
 * two cores against two and three (docs/performance.md, "Several changes in one statement"): the
 * fewer run at once, the more each carries, and the less the server and the database spend per
 * change. Other workspaces' batches, and the workspace's batches of the other kinds, run beside it.
 */
const BATCHES_IN_FLIGHT = 1;
/** Most changes (or adds, or look-ups) in one batch. */
const BATCH_SIZE = 32;

/** How a look-up names its user: by folded email or by public id (a UUID, checked by the caller). */
export type UserKeyKind = 'email' | 'id';

/**
 * Several look-ups of one workspace's users in one statement, each as `wum_user_by_email` or
 * `wum_user_by_id` does one: the user its key names, with its apps, or none. The keys come as
 * one JSON array; each row found carries its key's place (`ord`, from 1).
 */
const findBatch: Record<UserKeyKind, NamedStatement> = {
  email: findBatchStatement('email'),
  id: findBatchStatement('id'),
};

/** The statement of {@link findBatch} for keys of `kind`. */
function findBatchStatement(kind: UserKeyKind): NamedStatement {
  const matches = kind === 'email' ? sql`lower(users.email) = k.key` : sql`users.public_id = k.key::uuid`;
  return new NamedStatement(
    `wum_user_find_batch_${kind}`,
    () => sql`select k.ord, u.*
      from jsonb_array_elements_text(${ph('keys')}::jsonb) with ordinality as k(key, ord)
      cross join lateral (
        select ${userColumnsOf('users')}, ${appsOf('users')} as apps from users
        where users.workspace_id = ${workspaceParam} and ${matches}
        limit 1
      ) u`,
  );
}

/** How a repository writes one change or one add, or looks up one user, alone, in a statement of its own. */
export interface AloneStatements {
  /** A look-up without a lock: the user `key` names, or none. */
  find(workspaceId: number, kind: UserKeyKind, key: string): Promise<StoredUser | undefined>;
  /** `writeIfUnchanged`'s change: the user as written, or none if its row moved on. */
  change(workspaceId: number, write: PendingWrite): Promise<StoredUser | undefined>;
  /** `insertIfAbsent`'s add: the user as added, or none if refused. */
  add(workspaceId: number, add: PendingAdd): Promise<StoredUser | undefined>;
}

/** The combined writes of {@link createUserBatches}: each the outcome it would have alone. */
export interface UserBatches {
  /** Writes `write` (no apps replaced, no console session to end) with the changes of its workspace that wait with it. */
  change(workspaceId: number, write: PendingWrite): Promise<StoredUser | undefined>;
  /** Adds `add` with the adds of its workspace that wait with it. */
  add(workspaceId: number, add: PendingAdd): Promise<StoredUser | undefined>;
  /** Looks up the user `key` names (no lock) with the look-ups of its workspace that wait with it. */
  find(workspaceId: number, kind: UserKeyKind, key: string): Promise<StoredUser | undefined>;
}

/**
 * Gathers the concurrent changes, adds and look-ups of each workspace into batches
 * ({@link StatementCombiner}, a lane per workspace and statement), runs a batch of one as `alone`
 * does and a larger one as one statement, and tells `deliveries` of the deliveries each wrote. A
 * batch the database refuses as a whole (a deadlock with another process's batch, a row a
 * constraint refuses) is run again one by one with `alone`, so each gets its own outcome, as it
 * would have alone. Only over the pool: every batch runs on `db` outside any transaction.
 */
export function createUserBatches(db: Database, deliveries: UserDeliverySink, alone: AloneStatements): UserBatches {
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
  /** A batch: alone in its own statement, else together, else (refused as a whole) one by one. */
  const settle = async <W>(
    writes: readonly W[],
    one: (write: W) => Promise<StoredUser | undefined>,
    all: (writes: readonly W[]) => Promise<Array<StoredUser | undefined>>,
  ): Promise<Array<PromiseSettledResult<StoredUser | undefined>>> => {
    const oneByOne = () => Promise.allSettled(writes.map(one));
    if (writes.length === 1) return oneByOne();
    try {
      return (await all(writes)).map((value) => ({ status: 'fulfilled' as const, value }));
    } catch {
      return oneByOne();
    }
  };
  /** A combiner of one kind of write; `run` writes a batch, all of one workspace. */
  const combinerOf = <W>(
    identity: (write: W) => unknown,
    run: (workspaceId: number, writes: readonly W[]) => Promise<Array<PromiseSettledResult<StoredUser | undefined>>>,
  ) =>
    new StatementCombiner<W & { readonly workspaceId: number }, StoredUser | undefined>({
      maxInFlight: BATCHES_IN_FLIGHT,
      maxBatch: BATCH_SIZE,
      identity,
      // A lane is one workspace (and one statement): every write of a batch has the lane's.
      run: (writes) => run(writes[0]!.workspaceId, writes),
    });
  const changes = combinerOf<PendingWrite & { readonly counts: boolean }>(
    (write) => write.current.rowId,
    (workspaceId, writes) =>
      settle(
        writes,
        (write) => alone.change(workspaceId, write),
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
  const adds = combinerOf<PendingAdd>(
    (add) => foldEmail(add.user.email),
    (workspaceId, batch) =>
      settle(
        batch,
        (add) => alone.add(workspaceId, add),
        (all) =>
          together(
            workspaceId,
            addBatch,
            all.map(({ id, user, record }, ord) => ({ ord, public_id: id, ...batchUser(user, record) })),
            all.map((add) => add.user.apps),
          ),
      ),
  );
  const finds = combinerOf<{ readonly kind: UserKeyKind; readonly key: string }>(
    // Look-ups change nothing: any number of one user may share a batch.
    (lookUp) => lookUp,
    (workspaceId, lookUps) =>
      settle(
        lookUps,
        (lookUp) => alone.find(workspaceId, lookUp.kind, lookUp.key),
        async (all) => {
          const rows = await findBatch[all[0]!.kind].run<UserRow & { ord: number | string }>(db, {
            workspaceId,
            keys: JSON.stringify(all.map((lookUp) => lookUp.key)),
          });
          const found = new Map(rows.map((row) => [Number(row.ord) - 1, row]));
          return all.map((_, i) => {
            const row = found.get(i);
            return row ? toUser(row) : undefined;
          });
        },
      ),
  );
  return {
    find: (workspaceId, kind, key) => finds.submit(`${workspaceId}:find:${kind}`, { kind, key, workspaceId }),
    change(workspaceId, write) {
      // A status change moves the counts: its statement has that part, so it has a lane of its own.
      const counts = write.current.status !== write.user.status;
      return changes.submit(`${workspaceId}${counts ? ':counts' : ''}`, { ...write, workspaceId, counts });
    },
    add: (workspaceId, add) => adds.submit(`${workspaceId}:adds`, { ...add, workspaceId }),
  };
}
