import { sql, type SQL } from 'drizzle-orm';
import type { Actor } from '../core/actor.ts';
import type { AuditStream, PublicDestination, StreamCredentials, StreamFormat, StreamStatus } from '../core/audit-streams/audit-stream.ts';
import type { ClaimedStream, StreamQueue } from '../core/audit-streams/stream-queue.ts';
import type { AuditStreamRepository, StreamScope, StreamedAuditEvent } from '../core/audit-streams/audit-stream-repository.ts';
import { encryptSecret, type KeyRing } from '../core/secrets/secret-box.ts';
import type { Database } from './database.ts';
import { rowsOf } from './rows.ts';
import { isUuid } from './uuid.ts';

/*
 * Audit streams (docs/api.md, "Audit streams"): the streams themselves, and the worker's
 * statements. A stream's rows are read by audit id after its cursor, and only up to the id the
 * worker's settled horizon says is final (core/audit-streams/settled-horizon.ts), since ids are
 * taken before their transaction commits; docs/operations.md, "Audit streams", says what a
 * long-open transaction does to lag.
 */
interface StreamRow {
  id: string;
  workspace_id: number | string | null;
  subdomain: string | null;
  name: string;
  format: string;
  actions: string[] | null;
  destination: unknown;
  status: string;
  cursor: number | string;
  last_delivered_at: string | Date | null;
  last_error: string | null;
  failing_since: string | Date | null;
  created_at: string | Date;
  updated_at: string | Date;
}

const date = (value: string | Date | null): Date | null => (value === null ? null : new Date(value));
const json = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

function toStream(row: StreamRow): AuditStream {
  return {
    id: row.id,
    workspaceId: row.workspace_id === null ? null : Number(row.workspace_id),
    workspace: row.subdomain,
    name: row.name,
    format: row.format as StreamFormat,
    actions: row.actions,
    destination: json(row.destination) as PublicDestination,
    status: row.status as StreamStatus,
    cursor: Number(row.cursor),
    lastDeliveredAt: date(row.last_delivered_at),
    lastError: row.last_error,
    failingSince: date(row.failing_since),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** The columns of {@link StreamRow} from `audit_streams s` (and its workspace's subdomain). */
const COLUMNS = sql`s.id, s.workspace_id, (select w.subdomain from workspaces w where w.id = s.workspace_id) as subdomain,
  s.name, s.format, s.actions, s.destination, s.status, s.cursor, s.last_delivered_at, s.last_error, s.failing_since,
  s.created_at, s.updated_at`;

const scopeWhere = (scope: StreamScope): SQL => (scope === 'all' ? sql`true` : sql`s.workspace_id = ${scope.workspaceId}::int8`);

/** `text[]` of `values`, or null. */
const textArray = (values: readonly string[] | null | undefined): SQL =>
  values === null || values === undefined ? sql`null::text[]` : sql`${`{${values.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}`}::text[]`;

/** Audit rows of `stream`'s workspace (every row for an operator's stream), as SQL over `a`. */
const rowsOfStream = (workspaceId: number | null): SQL => (workspaceId === null ? sql`true` : sql`a.workspace_id = ${workspaceId}::int8`);

/** The first statement's `returning` then read back with the subdomain. */
async function one(db: Database, statement: SQL): Promise<AuditStream | undefined> {
  const [row] = rowsOf<StreamRow>(await db.execute(sql`with changed as (${statement} returning *)
    select ${COLUMNS} from changed s`));
  return row ? toStream(row) : undefined;
}

/** The audit stream repository over `db`; credentials are encrypted with `keyRing`. */
export function createAuditStreamRepository(db: Database, keyRing: KeyRing): AuditStreamRepository {
  const seal = (credentials: StreamCredentials) => encryptSecret(keyRing, JSON.stringify(credentials));
  const changed = async (statement: SQL, id: string) => {
    const stream = await one(db, statement);
    if (!stream) throw new Error(`audit stream ${id} vanished during its change`);
    return stream;
  };
  return {
    async insert(stream) {
      return changed(
        sql`insert into audit_streams (workspace_id, name, format, actions, destination_type, destination, credentials, cursor)
          values (${stream.workspaceId}::int8, ${stream.name}, ${stream.format}, ${textArray(stream.actions)}, ${stream.destination.type},
            ${JSON.stringify(stream.destination)}::jsonb, ${seal(stream.credentials)}, coalesce((select max(id) from audit_events), 0))`,
        'new',
      );
    },

    async find(scope, id, options = {}) {
      if (!isUuid(id)) return undefined;
      const [row] = rowsOf<StreamRow>(
        await db.execute(sql`select ${COLUMNS} from audit_streams s where s.id = ${id}::uuid and ${scopeWhere(scope)}
          ${options.lock ? sql`for update of s` : sql``}`),
      );
      return row ? toStream(row) : undefined;
    },

    async findAll(scope) {
      const rows = rowsOf<StreamRow>(await db.execute(sql`select ${COLUMNS} from audit_streams s where ${scopeWhere(scope)} order by s.created_at, s.id`));
      return rows.map(toStream);
    },

    async lag(stream) {
      const [row] = rowsOf<{ rows: number | string; oldest: string | Date | null }>(
        await withoutJit(db, sql`select count(*) as rows, min(a.occurred_at) as oldest from audit_events a
          where a.id > ${stream.cursor}::int8 and ${rowsOfStream(stream.workspaceId)}
            and (${textArray(stream.actions)} is null or a.action = any(${textArray(stream.actions)}))`),
      );
      const oldest = date(row?.oldest ?? null);
      return { rows: Number(row?.rows ?? 0), seconds: oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0 };
    },

    async update(id, changes) {
      const sets: SQL[] = [sql`updated_at = now()`];
      if (changes.name !== undefined) sets.push(sql`name = ${changes.name}`);
      if (changes.format !== undefined) sets.push(sql`format = ${changes.format}`);
      if (changes.actions !== undefined) sets.push(sql`actions = ${textArray(changes.actions)}`);
      if (changes.destination !== undefined) {
        sets.push(sql`destination_type = ${changes.destination.type}, destination = ${JSON.stringify(changes.destination)}::jsonb`);
      }
      if (changes.credentials !== undefined) sets.push(sql`credentials = ${seal(changes.credentials)}`);
      if (changes.status === 'paused') sets.push(sql`status = 'paused'`);
      if (changes.status === 'active') {
        sets.push(sql`status = 'active', failures = 0, failing_since = null, next_attempt_at = now()`);
      }
      // A batch in flight was read and rendered under the old settings: its outcome is not recorded.
      if (changes.format !== undefined || changes.actions !== undefined || changes.destination !== undefined || changes.status === 'paused') {
        sets.push(sql`claim_id = null`);
      }
      return changed(sql`update audit_streams set ${sql.join(sets, sql`, `)} where id = ${id}::uuid`, id);
    },

    async rewind(id, from) {
      const stream = await changed(
        sql`update audit_streams s set next_attempt_at = now(), claim_id = null, updated_at = now(),
            cursor = least(s.cursor, coalesce(
              (select min(a.id) - 1 from audit_events a where a.occurred_at >= ${from.toISOString()}::timestamptz
                and (s.workspace_id is null or a.workspace_id = s.workspace_id)),
              s.cursor))
          where s.id = ${id}::uuid`,
        id,
      );
      const [row] = rowsOf<{ oldest: string | Date | null }>(
        await db.execute(sql`select min(a.occurred_at) as oldest from audit_events a where ${rowsOfStream(stream.workspaceId)}`),
      );
      return { stream, oldestKept: date(row?.oldest ?? null) };
    },

    async delete(id) {
      await db.execute(sql`delete from audit_streams where id = ${id}::uuid`);
    },

    async credentials(id) {
      const [row] = rowsOf<{ credentials: string }>(await db.execute(sql`select credentials from audit_streams where id = ${id}::uuid`));
      return row?.credentials;
    },

    async pauseFailing(failingBefore) {
      const rows = rowsOf<StreamRow>(
        await db.execute(sql`with due as (
            select id from audit_streams where status = 'failing' and failing_since < ${failingBefore.toISOString()}::timestamptz
            order by failing_since for update skip locked
          ),
          changed as (
            update audit_streams s set status = 'paused', claim_id = null, updated_at = now() from due where s.id = due.id returning s.*
          )
          select ${COLUMNS} from changed s`),
      );
      return rows.map(toStream);
    },
  };
}

interface AuditRow {
  id: number | string;
  workspace_id: number | string | null;
  subdomain: string | null;
  occurred_at: string | Date;
  actor_type: string;
  actor_id: string | null;
  actor_label: string | null;
  request_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  user_id: string | null;
  before: unknown;
  after: unknown;
}


/** The stream worker's queue over `db` (the statements above). */
export function createStreamQueue(db: Database): StreamQueue {
  return {
    async sampleAuditIds() {
      // Two statements, in this order: a transaction that took an id before the first had its
      // xid by then (migration 0019), so the second lists it while it is open. The open ones are
      // read from pg_stat_activity, not from a snapshot: PostgreSQL reuses a backend's snapshot
      // while no transaction has ended, and a transaction started since is then past its xmax,
      // in no xip list.
      const [last] = rowsOf<{ last_id: number | string; streaming: boolean }>(
        await db.execute(sql`select case when is_called then last_value else 0 end as last_id,
            exists (select 1 from audit_streams where status <> 'paused') as streaming
          from audit_events_id_seq`),
      );
      if (!last?.streaming) return undefined;
      const [open] = rowsOf<{ xids: string[] }>(await db.execute(sql`select array(select backend_xid::text from pg_stat_activity
            where datname = current_database() and backend_xid is not null) as xids`));
      return { lastId: Number(last.last_id), openTransactions: open?.xids ?? [] };
    },

    async claimDue(max, leaseMs, settledThrough) {
      const rows = rowsOf<StreamRow & { claim_id: string; credentials: string; failures: number }>(
        await db.execute(sql`with due as (
            select s.id from audit_streams s
            where s.status <> 'paused' and s.next_attempt_at <= now() and (s.claimed_until is null or s.claimed_until < now())
              and s.cursor < ${settledThrough}::int8
              and ${firstRowAfterCursor(settledThrough)} is not null
            order by s.next_attempt_at limit ${max}::int
            for update of s skip locked
          ),
          changed as (
            update audit_streams s set claim_id = gen_random_uuid(), claimed_until = now() + make_interval(secs => ${leaseMs / 1000}::float8)
            from due where s.id = due.id returning s.*
          )
          select ${COLUMNS}, s.claim_id, s.credentials, s.failures from changed s`),
      );
      return rows.map((row) => ({ stream: toStream(row), claimId: row.claim_id, credentials: row.credentials, failures: Number(row.failures) }));
    },

    async readRows(stream, scan, settledThrough) {
      const rows = rowsOf<AuditRow>(
        // A workspace's stream knows its subdomain: only an operator's stream of every workspace looks each row's up.
        await db.execute(sql`select a.id, a.workspace_id, ${stream.workspaceId === null ? sql`(select w.subdomain from workspaces w where w.id = a.workspace_id)` : sql`${stream.workspace}::text`} as subdomain,
            a.occurred_at, a.actor_type, a.actor_id, a.actor_label, a.request_id, a.action, a.target_type, a.target_id, a.user_id, a.before, a.after
          from audit_events a
          where a.id > ${stream.cursor}::int8 and a.id <= ${settledThrough}::int8 and ${rowsOfStream(stream.workspaceId)}
          order by a.id limit ${scan}::int`),
      );
      return rows.map(toStreamedEvent);
    },

    async recordDelivered(claim, through, nextInMs, sent) {
      const health = sent
        ? sql`last_delivered_at = now(), status = case when status = 'paused' then 'paused' else 'active' end,
            failures = 0, failing_since = null, last_error = null,`
        : sql``;
      const [row] = rowsOf<{ id: string }>(
        await db.execute(sql`update audit_streams set cursor = greatest(cursor, ${through}::int8), ${health}
            next_attempt_at = now() + make_interval(secs => ${nextInMs / 1000}::float8), claim_id = null, claimed_until = null
          where id = ${claim.stream.id}::uuid and claim_id = ${claim.claimId}::uuid returning id`),
      );
      if (!row) await releaseVoided(db, claim);
      return row !== undefined;
    },

    async recordFailed(claim, error, retryInMs) {
      const [row] = rowsOf<{ id: string }>(
        await db.execute(sql`update audit_streams set last_error = ${error}, failures = failures + 1,
            failing_since = coalesce(failing_since, now()),
            status = case when status = 'paused' then 'paused' else 'failing' end,
            next_attempt_at = now() + make_interval(secs => ${retryInMs / 1000}::float8), claim_id = null, claimed_until = null
          where id = ${claim.stream.id}::uuid and claim_id = ${claim.claimId}::uuid returning id`),
      );
      if (!row) await releaseVoided(db, claim);
    },

    async release(claim, nextInMs) {
      await db.execute(sql`update audit_streams set claim_id = null, claimed_until = null,
          next_attempt_at = now() + make_interval(secs => ${nextInMs / 1000}::float8)
        where id = ${claim.stream.id}::uuid and claim_id = ${claim.claimId}::uuid`);
      await releaseVoided(db, claim);
    },

    async lags() {
      const rows = rowsOf<{ id: string; status: string; rows: number | string; oldest: string | Date | null }>(
        await withoutJit(db, sql`select s.id, s.status, l.rows, l.oldest from audit_streams s cross join lateral (
            select count(*) as rows, min(a.occurred_at) as oldest from audit_events a
            where a.id > s.cursor and (s.workspace_id is null or a.workspace_id = s.workspace_id)
              and (s.actions is null or a.action = any(s.actions))
          ) l`),
      );
      return rows.map((r) => {
        const oldest = date(r.oldest);
        return { id: r.id, status: r.status, rows: Number(r.rows), seconds: oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0 };
      });
    },
  };
}

/**
 * The first audit id after stream `s`'s cursor through `settledThrough` of its workspace (of
 * any, for an operator's stream), or null: one probe of an index per stream. Written as a
 * scalar subquery with `limit 1`, not `exists`: PostgreSQL turns an `exists` into a semi-join,
 * and with the statistics of a young table it chose to read every audit row up to the horizon
 * into memory once per claim (18–28 ms a claim at 7,000 rows on the benchmark, growing with
 * the table; docs/performance.md, "Audit streams").
 */
function firstRowAfterCursor(settledThrough: number): SQL {
  return sql`(case when s.workspace_id is null
      then (select a.id from audit_events a where a.id > s.cursor and a.id <= ${settledThrough}::int8 order by a.id limit 1)
      else (select a.id from audit_events a where a.workspace_id = s.workspace_id and a.id > s.cursor and a.id <= ${settledThrough}::int8
        order by a.workspace_id, a.id limit 1)
    end)`;
}

/**
 * Runs a count of the rows after streams' cursors with PostgreSQL's JIT compiler off. The
 * planner cannot know a cursor is near the newest row, so it prices such a count at a third of
 * the table per stream, past JIT's threshold: the compiling then took 400 ms of a 0.1 ms count
 * on the benchmark, at every metrics scrape (docs/operations.md, "Audit streams").
 */
async function withoutJit(db: Database, query: SQL) {
  return db.transaction(async (tx) => {
    await tx.execute(sql`set local jit = off`);
    return tx.execute(query);
  });
}

/** Ends the lease of a claim a change voided (`claim_id` cleared), so the stream is claimed again at once. */
async function releaseVoided(db: Database, claim: ClaimedStream): Promise<void> {
  await db.execute(sql`update audit_streams set claimed_until = null where id = ${claim.stream.id}::uuid and claim_id is null`);
}

function toStreamedEvent(row: AuditRow): StreamedAuditEvent {
  return {
    id: Number(row.id),
    workspaceId: row.workspace_id === null ? null : Number(row.workspace_id),
    workspace: row.subdomain,
    occurredAt: new Date(row.occurred_at),
    actor: { type: row.actor_type as Actor['type'], id: row.actor_id, label: row.actor_label, requestId: row.request_id },
    action: row.action,
    targetType: row.target_type,
    targetId: row.target_id,
    userId: row.user_id,
    before: json(row.before),
    after: json(row.after),
  };
}
