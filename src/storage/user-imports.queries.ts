import { sql, type SQL } from 'drizzle-orm';
import type { Actor } from '../core/actor.ts';
import { pageOffset } from '../core/pagination.ts';
import type { UserImportRepository } from '../core/users/import-repository.ts';
import type { ImportFormat, ImportJob, ImportOutcome, ImportStatus, PendingImportRow } from '../core/users/import-job.ts';
import type { AddUserInput } from '../core/users/users-service.ts';
import type { AppRole, WorkspaceRole } from '../core/users/user.ts';
import type { Database } from './database.ts';
import { NamedStatement, ph } from './named-statement.ts';
import { rowsOf } from './rows.ts';
import { isUuid } from './uuid.ts';

/*
 * Bulk import jobs and their rows (docs/contract.md Part B, "Importing users in bulk"). Rows are
 * staged and given their outcomes with one statement per batch (`unnest` of parallel arrays,
 * which PostgreSQL and PGlite run alike); a job's counts change in the transaction of the batch
 * that processed the rows they count.
 */

/** A job row as either driver returns it. */
interface JobRow {
  id: string;
  status: string;
  format: string;
  rows_total: number | null;
  rows_done: number;
  added: number;
  reactivated: number;
  skipped: number;
  rejected: number;
  error: string | null;
  created_at: string | Date;
  started_at: string | Date | null;
  completed_at: string | Date | null;
}

const JOB_COLUMNS = sql.raw(
  'id, status, format, rows_total, rows_done, added, reactivated, skipped, rejected, error, created_at, started_at, completed_at',
);

function toDate(value: string | Date | null): Date | null {
  return value === null ? null : value instanceof Date ? value : new Date(value);
}

function toJob(row: JobRow): ImportJob {
  return {
    id: row.id,
    status: row.status as ImportStatus,
    format: row.format as ImportFormat,
    rowsTotal: row.rows_total === null ? null : Number(row.rows_total),
    rowsDone: Number(row.rows_done),
    added: Number(row.added),
    reactivated: Number(row.reactivated),
    skipped: Number(row.skipped),
    rejected: Number(row.rejected),
    error: row.error,
    createdAt: toDate(row.created_at)!,
    startedAt: toDate(row.started_at),
    completedAt: toDate(row.completed_at),
  };
}

/** The end of a lease of `seconds` (a value or a placeholder) from now. */
function leaseEnd(seconds: unknown): SQL {
  return sql`now() + make_interval(secs => ${seconds}::float8)`;
}

/*
 * The statements of every batch of a job, named: on the embedded store a batch holds the one
 * connection, and an unnamed statement is parsed and planned again at each batch
 * (docs/performance.md, "Named statements on the embedded store").
 */

/** The job, locked until commit, if it is still running under `owner`'s lease. */
const lockLeasedJob = new NamedStatement(
  'wum_import_job_lock_leased',
  () => sql`select ${JOB_COLUMNS} from user_import_jobs
    where workspace_id = ${ph('workspaceId')}::int8 and id = ${ph('jobId')}::uuid and status = 'running' and lease_owner = ${ph('owner')}::text
    for update`,
);

/** The job's next `limit` rows without an outcome, in file order. */
const pendingRows = new NamedStatement(
  'wum_import_rows_pending',
  () => sql`select row_number, email, payload from user_import_rows
    where workspace_id = ${ph('workspaceId')}::int8 and job_id = ${ph('jobId')}::uuid and outcome is null
    order by row_number limit ${ph('limit')}::int4`,
);

/** Each row's outcome (its payload dropped), and the job's counts and lease moved on, in one statement. */
const recordOutcomes = new NamedStatement(
  'wum_import_rows_record',
  () => sql`with recorded as (
      update user_import_rows r set outcome = o.outcome, code = o.code, detail = o.detail, payload = null
      from unnest(${ph('rows')}::int4[], ${ph('outcomes')}::text[], ${ph('codes')}::text[], ${ph('details')}::text[])
        as o(row_number, outcome, code, detail)
      where r.workspace_id = ${ph('workspaceId')}::int8 and r.job_id = ${ph('jobId')}::uuid and r.row_number = o.row_number
    )
    update user_import_jobs set rows_done = rows_done + ${ph('done')}::int4, added = added + ${ph('added')}::int4,
      reactivated = reactivated + ${ph('reactivated')}::int4, skipped = skipped + ${ph('skipped')}::int4,
      rejected = rejected + ${ph('rejected')}::int4, lease_until = ${leaseEnd(ph('leaseSeconds'))}
    where workspace_id = ${ph('workspaceId')}::int8 and id = ${ph('jobId')}::uuid`,
);

/** The user of a staged row as JSON (instants as RFC 3339 text). */
type StoredInput = Omit<AddUserInput, 'apps' | 'expiresAt'> & {
  apps: Array<{ name: string; role: string; expiresAt?: string }>;
  expiresAt?: string | null;
};

/** A staged payload → the domain's input (instants back to `Date`). */
function toInput(payload: StoredInput): AddUserInput {
  const { apps, expiresAt, role, ...rest } = payload;
  return {
    ...rest,
    role: role as WorkspaceRole,
    apps: apps.map((a): AppRole => (a.expiresAt ? { name: a.name, role: a.role, expiresAt: new Date(a.expiresAt) } : { name: a.name, role: a.role })),
    ...(expiresAt === undefined ? {} : { expiresAt: expiresAt === null ? null : new Date(expiresAt) }),
  };
}

/** The import repository over `db`. */
export function createUserImportRepository(db: Database): UserImportRepository {
  const jobs = async (query: ReturnType<typeof sql>): Promise<ImportJob[]> => rowsOf<JobRow>(await db.execute(query)).map(toJob);
  const lease = (ms: number) => leaseEnd(ms / 1000);

  return {
    async create(workspaceId, { format, actor, owner, leaseMs }) {
      const [job] = await jobs(sql`insert into user_import_jobs (workspace_id, status, format, actor, lease_owner, lease_until)
        values (${workspaceId}, 'queued', ${format}, ${JSON.stringify(actor)}::jsonb, ${owner}, ${lease(leaseMs)})
        returning ${JOB_COLUMNS}`);
      return job!;
    },

    async stage(workspaceId, jobId, rows, leaseMs) {
      const payloads = rows.map((r) => ('user' in r ? JSON.stringify(r.user) : null));
      await db.execute(sql`with staged as (
          insert into user_import_rows (workspace_id, job_id, row_number, email, payload, outcome, code, detail)
          select ${workspaceId}, ${jobId}::uuid, r.row_number, r.email, r.payload,
            case when r.payload is null then 'rejected' end, r.code, r.detail
          from unnest(${sql.param(rows.map((r) => r.row))}::int4[], ${sql.param(rows.map((r) => r.email))}::text[],
            ${sql.param(payloads)}::jsonb[], ${sql.param(rows.map((r) => ('rejection' in r ? r.rejection.code : null)))}::text[],
            ${sql.param(rows.map((r) => ('rejection' in r ? r.rejection.detail : null)))}::text[])
            as r(row_number, email, payload, code, detail)
        )
        update user_import_jobs set lease_until = ${lease(leaseMs)} where workspace_id = ${workspaceId} and id = ${jobId}::uuid`);
    },

    async uploaded(workspaceId, jobId, rowsTotal, rejected) {
      const [job] = await jobs(sql`update user_import_jobs set uploaded_at = now(), rows_total = ${rowsTotal},
          rows_done = rows_done + ${rejected}, rejected = rejected + ${rejected}, lease_owner = null, lease_until = null
        where workspace_id = ${workspaceId} and id = ${jobId}::uuid
        returning ${JOB_COLUMNS}`);
      return job!;
    },

    async fail(workspaceId, jobId, error) {
      await db.execute(sql`with failed as (
          update user_import_jobs set status = 'failed', error = ${error}, completed_at = now(), lease_owner = null, lease_until = null
          where workspace_id = ${workspaceId} and id = ${jobId}::uuid and status in ('queued', 'running')
          returning id
        )
        update user_import_rows set payload = null
        where workspace_id = ${workspaceId} and job_id in (select id from failed) and payload is not null`);
    },

    async find(workspaceId, jobId) {
      if (!isUuid(jobId)) return undefined;
      const [job] = await jobs(sql`select ${JOB_COLUMNS} from user_import_jobs
        where workspace_id = ${workspaceId} and id = ${jobId}::uuid`);
      return job;
    },

    async findPage(workspaceId, page) {
      const [count] = rowsOf<{ n: number | string }>(
        await db.execute(sql`select count(*) as n from user_import_jobs where workspace_id = ${workspaceId}`),
      );
      const rows = await jobs(sql`select ${JOB_COLUMNS} from user_import_jobs where workspace_id = ${workspaceId}
        order by created_at desc, id limit ${page.pageSize} offset ${pageOffset(page)}`);
      return { rows, total: Number(count?.n ?? 0) };
    },

    async report(workspaceId, jobId, afterRow, limit) {
      const rows = rowsOf<{ row_number: number; email: string; outcome: string | null; code: string | null; detail: string | null }>(
        await db.execute(sql`select row_number, email, outcome, code, detail from user_import_rows
          where workspace_id = ${workspaceId} and job_id = ${jobId}::uuid and row_number > ${afterRow}
          order by row_number limit ${limit}`),
      );
      return rows.map((r) => ({
        row: Number(r.row_number),
        email: r.email,
        outcome: (r.outcome ?? 'not_attempted') as ImportOutcome,
        code: r.code,
        detail: r.detail,
      }));
    },

    async cancel(workspaceId, jobId) {
      if (!isUuid(jobId)) return undefined;
      // Waits for the batch under way (it holds the job's row); its rows are then done, and the
      // rest is left unprocessed, reported `not_attempted`, without its payload.
      const [job] = await jobs(sql`with cancelled as (
          update user_import_jobs set status = 'cancelled', completed_at = now(), lease_owner = null, lease_until = null
          where workspace_id = ${workspaceId} and id = ${jobId}::uuid and status in ('queued', 'running')
          returning ${JOB_COLUMNS}
        ),
        dropped as (
          update user_import_rows set payload = null
          where workspace_id = ${workspaceId} and job_id in (select id from cancelled) and outcome is null
        )
        select * from cancelled`);
      return job ?? (await this.find(workspaceId, jobId));
    },

    async claim(owner, leaseMs) {
      await db.execute(sql`with abandoned as (
          select workspace_id, id from user_import_jobs
          where status = 'queued' and uploaded_at is null and lease_until < now()
          for update skip locked
        ),
        failed as (
          update user_import_jobs j set status = 'failed', error = 'the upload was interrupted', completed_at = now(),
            lease_owner = null, lease_until = null
          from abandoned a where j.workspace_id = a.workspace_id and j.id = a.id
          returning j.workspace_id, j.id
        )
        update user_import_rows r set payload = null from failed f
        where r.workspace_id = f.workspace_id and r.job_id = f.id and r.payload is not null`);
      const [claimed] = rowsOf<{ workspace_id: number | string; id: string; actor: Actor | string }>(
        await db.execute(sql`update user_import_jobs j set status = 'running', started_at = coalesce(j.started_at, now()),
            lease_owner = ${owner}, lease_until = ${lease(leaseMs)}
          from (
            select workspace_id, id from user_import_jobs
            where status in ('queued', 'running') and uploaded_at is not null and (lease_until is null or lease_until < now())
            order by created_at limit 1
            for update skip locked
          ) c
          where j.workspace_id = c.workspace_id and j.id = c.id
          returning j.workspace_id, j.id, j.actor`),
      );
      if (!claimed) return undefined;
      const actor = typeof claimed.actor === 'string' ? (JSON.parse(claimed.actor) as Actor) : claimed.actor;
      return { workspaceId: Number(claimed.workspace_id), jobId: claimed.id, actor };
    },

    async lockLeased(workspaceId, jobId, owner) {
      const [job] = await lockLeasedJob.run<JobRow>(db, { workspaceId, jobId, owner });
      return job ? toJob(job) : undefined;
    },

    async pending(workspaceId, jobId, limit): Promise<PendingImportRow[]> {
      const rows = await pendingRows.run<{ row_number: number; email: string; payload: StoredInput | string }>(db, { workspaceId, jobId, limit });
      return rows.map((r) => ({
        row: Number(r.row_number),
        email: r.email,
        user: toInput(typeof r.payload === 'string' ? (JSON.parse(r.payload) as StoredInput) : r.payload),
      }));
    },

    async record(workspaceId, jobId, outcomes, leaseMs) {
      const count = (outcome: string) => outcomes.filter((o) => o.outcome === outcome).length;
      await recordOutcomes.run(db, {
        workspaceId,
        jobId,
        rows: outcomes.map((o) => o.row),
        outcomes: outcomes.map((o) => o.outcome),
        codes: outcomes.map((o) => o.code ?? null),
        details: outcomes.map((o) => o.detail ?? null),
        done: outcomes.length,
        added: count('added'),
        reactivated: count('reactivated'),
        skipped: count('skipped'),
        rejected: count('rejected'),
        leaseSeconds: leaseMs / 1000,
      });
    },

    async complete(workspaceId, jobId) {
      await db.execute(sql`update user_import_jobs set status = 'completed', completed_at = now(), lease_owner = null, lease_until = null
        where workspace_id = ${workspaceId} and id = ${jobId}::uuid and status = 'running'`);
    },
  };
}
