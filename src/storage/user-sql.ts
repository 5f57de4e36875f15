import { sql, type SQL } from 'drizzle-orm';
import type { UserChangeRecord } from '../core/users/user-repository.ts';
import type { AppRole, ScimAttributes, StoredUser, UserStatus, UserWrite, WorkspaceRole } from '../core/users/user.ts';
import type { ClaimedDelivery } from '../core/webhooks/delivery-queue.ts';
import { WIRE_USER_FIELDS, type WireUserSource } from '../core/users/wire-user.ts';
import { auditEventParams } from './audit.queries.ts';
import { eventInsert, handOffColumn } from './events.queries.ts';
import { ph } from './named-statement.ts';
import { USER_COUNT_LEVEL_BITS } from './schema.ts';

/*
 * The SQL that the statements writing and reading users share (users.queries.ts, one user at a
 * time; user-batches.queries.ts, several): the columns of a user row and how a row becomes a
 * domain user, the user as the API shows it in JSON, the values of a write, the counts' change,
 * and the event of a change with the deliveries it hands over.
 */

/**
 * Slots a block's count is spread over (`user_counts.slot` = user id modulo this): adds to one
 * workspace lock different count rows. Any value is correct, since a count is the sum
 * over all slots; changing it needs no migration.
 */
const COUNT_SLOTS = 4;

/** The workspace every statement is confined to. */
export const workspaceParam = ph('workspaceId');

/** One app as the API shows it: `{name, role}`, and `expires_at` (RFC 3339) only on a grant that ends. */
function appJson(product: SQL, role: SQL, expiresAt: SQL): SQL {
  return sql`(jsonb_build_object('name', ${product}, 'role', ${role})
    || case when ${expiresAt} is null then '{}'::jsonb else jsonb_build_object('expires_at', ${isoTimestamp(expiresAt)}) end)`;
}

/** The apps of the user row of `table` as a JSON array, in the order they were given. */
export function appsOf(table: string, workspace: SQL = sql`${workspaceParam}`): SQL {
  return sql`coalesce((
    select json_agg(${appJson(sql`ua.product`, sql`ua.role`, sql`ua.expires_at`)} order by ua.position)
    from user_apps ua
    where ua.workspace_id = ${workspace} and ua.user_id = ${sql.identifier(table)}.id
  ), '[]'::json)`;
}

/** The columns of a user row, of `table`, in the shape {@link toUser} reads. */
export function userColumnsOf(table: string): SQL {
  const row = sql.identifier(table);
  return sql`${row}.id, ${row}.public_id, ${row}.email, ${row}.role, ${row}.first_name, ${row}.last_name, ${row}.status,
    ${row}.external_id, ${row}.scim_attributes, ${row}.scim_deleted, ${row}.version, ${row}.created_at, ${row}.updated_at,
    ${row}.expires_at, ${row}.last_active_at`;
}

/** A user row as either driver returns it: int8 as number or string, timestamps as text. */
export interface UserRow {
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

/** A user row as either driver returns it → the domain's stored user; `apps` when the caller knows them (a write), else the row's. */
export function toUser(row: UserRow, apps: readonly AppRole[] = toApps(row.apps ?? [])): StoredUser {
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
export const appsParam = sql`unnest(${ph('products')}::text[], ${ph('roles')}::text[], ${ph('appExpiries')}::timestamptz[])
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
export function wireUserJson(apps: SQL): SQL {
  const pairs = WIRE_USER_FIELDS.map(([wire, field]) => sql`${sql.raw(`'${wire}'`)}, ${field === 'apps' ? apps : WIRE_COLUMNS[field]}`);
  return sql`jsonb_build_object(${sql.join(pairs, sql`, `)})`;
}

/** The actor bound by {@link auditEventParams}, as the event shows it. */
export const actorJson = sql`jsonb_build_object('type', ${ph('actorType')}::text, 'id', ${ph('actorId')}::text, 'label', ${ph('actorLabel')}::text)`;

/** The lease of the deliveries a write hands to this process's worker, in seconds (0: none). */
export const leaseParam = ph('deliveryLeaseSecs');

/**
 * The outbox event (and its deliveries) of the change of the user row `s` of CTE `source`;
 * `handOff`: its deliveries written with the lease {@link leaseParam}, for {@link handOffColumn}.
 */
export function userEventInsert(source: string, user: SQL = wireUserJson(appsParamJson), handOff = false): SQL {
  const lease = handOff ? { leaseSecs: leaseParam } : {};
  return eventInsert(source, { workspaceId: workspaceParam, type: ph('eventType'), user, previous: ph('previous'), actor: actorJson, extra: ph('extra'), ...lease });
}

/** The column `handoff` of a statement whose event was written by `userEventInsert(…, true)`. */
export const handOff = sql`${handOffColumn(workspaceParam, leaseParam)} as handoff`;

/** The values of every statement that writes `user` with its change record. */
export function writeParams(workspaceId: number, user: UserWrite, record: UserChangeRecord): Record<string, unknown> {
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
export function countChange(source: string, changes: SQL, when: SQL = sql`true`, many = false): SQL {
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
export type WrittenRow = UserRow & { handoff?: unknown };
