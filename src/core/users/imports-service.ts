import type { Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import { paginate, type Page, type PageRequest } from '../pagination.ts';
import type { Store } from '../ports.ts';
import { importBatch } from './import-batch.ts';
import { IMPORT_LIMITS, type ImportClaim, type ImportFormat, type ImportJob, type ImportReportRow, type StagedImportRow } from './import-job.ts';

/*
 * Bulk import jobs (docs/contract.md Part B, "Importing users in bulk"): the upload stages the
 * rows as they arrive, a worker in any process applies them in batches, each batch one
 * transaction that also records the job's progress, so a crash loses at most the batch under way
 * and never applies a row twice.
 */

/** Rows staged per statement while an upload streams in. */
const STAGE_BATCH = 1_000;
/** How long an uploader's lease lasts without a staged batch: past it the upload is taken for dead. */
const UPLOAD_LEASE_MS = 60_000;

/**
 * Starts an import of `rows` (a stream of parsed rows of the uploaded body): creates the job,
 * stages the rows in batches as they arrive (an invalid row is staged already `rejected`), and
 * queues the job once the last row is staged. `owner` names the uploading process in the lease.
 * An upload that fails (the body is not a valid file, too large, cut off) fails the job, which
 * keeps the error, and the error propagates.
 * @returns the queued job.
 * @throws AppError `import_in_progress` (409) when the workspace has a queued or running job;
 *   `payload_too_large` (413) past {@link IMPORT_LIMITS}`.maxRows`; whatever `rows` throws.
 */
export async function startImport(
  store: Store,
  workspaceId: number,
  actor: Actor,
  format: ImportFormat,
  rows: AsyncIterable<StagedImportRow>,
  owner: string,
): Promise<ImportJob> {
  const job = await store.imports.create(workspaceId, { format, actor, owner, leaseMs: UPLOAD_LEASE_MS });
  let total = 0;
  let rejected = 0;
  let batch: StagedImportRow[] = [];
  try {
    for await (const row of rows) {
      total += 1;
      if (total > IMPORT_LIMITS.maxRows) {
        throw new AppError('payload_too_large', `An import holds at most ${IMPORT_LIMITS.maxRows} rows.`);
      }
      if ('rejection' in row) rejected += 1;
      batch.push(row);
      if (batch.length >= STAGE_BATCH) {
        await store.imports.stage(workspaceId, job.id, batch, UPLOAD_LEASE_MS);
        batch = [];
      }
    }
    if (batch.length > 0) await store.imports.stage(workspaceId, job.id, batch, UPLOAD_LEASE_MS);
  } catch (error) {
    await store.imports.fail(workspaceId, job.id, error instanceof AppError ? error.detail : 'the upload was interrupted');
    throw error;
  }
  return store.imports.uploaded(workspaceId, job.id, total, rejected);
}

/** The detail of `import_not_found`. */
function notFound(id: string): AppError {
  return new AppError('import_not_found', `No import with id ${id} in this workspace.`);
}

/**
 * One import job.
 * @throws AppError `import_not_found` (404).
 */
export async function getImport(store: Store, workspaceId: number, id: string): Promise<ImportJob> {
  const job = await store.imports.find(workspaceId, id);
  if (!job) throw notFound(id);
  return job;
}

/** A page of the workspace's import jobs, newest first. */
export async function listImports(store: Store, workspaceId: number, page: PageRequest): Promise<Page<ImportJob>> {
  const { rows, total } = await store.imports.findPage(workspaceId, page);
  return { items: rows, pagination: paginate(page, total) };
}

/** Report rows read per statement. */
const REPORT_CHUNK = 5_000;

/**
 * A job's per-row report in file order, read in chunks as the caller consumes it (a job may
 * have a million rows): rows not processed yet (or left by a cancel) are `not_attempted`.
 * @throws AppError `import_not_found` (404), before the first row.
 */
export async function importReport(store: Store, workspaceId: number, id: string): Promise<AsyncIterable<ImportReportRow>> {
  await getImport(store, workspaceId, id);
  return {
    async *[Symbol.asyncIterator]() {
      let after = 0;
      for (;;) {
        const chunk = await store.imports.report(workspaceId, id, after, REPORT_CHUNK);
        yield* chunk;
        if (chunk.length < REPORT_CHUNK) return;
        after = chunk[chunk.length - 1]!.row;
      }
    },
  };
}

/**
 * Cancels a queued or running job: the batch under way (if any) commits, no further batch
 * starts, and the rows left are reported `not_attempted`.
 * @returns the job after.
 * @throws AppError `import_not_found` (404); `import_finished` (409) for a job already over.
 */
export async function cancelImport(store: Store, workspaceId: number, id: string): Promise<ImportJob> {
  const before = await getImport(store, workspaceId, id);
  if (before.status !== 'queued' && before.status !== 'running') {
    throw new AppError('import_finished', `The import ${id} is ${before.status} already.`);
  }
  const job = await store.imports.cancel(workspaceId, id);
  if (!job) throw notFound(id);
  return job;
}

/**
 * Applies the next batch of a claimed job in one transaction with the job's progress, while the
 * job is still leased to `owner` and running; completes the job when no row is left.
 * @returns `more` when rows may remain, `done` when the job is over (completed, cancelled,
 *   or taken over by another process).
 */
export async function runImportBatch(store: Store, claim: ImportClaim, owner: string, batchSize: number, leaseMs: number): Promise<'more' | 'done'> {
  const { workspaceId, jobId, actor } = claim;
  return store.transaction(async (tx) => {
    if (!(await tx.imports.lockLeased(workspaceId, jobId, owner))) return 'done';
    const rows = await tx.imports.pending(workspaceId, jobId, batchSize);
    if (rows.length === 0) {
      await tx.imports.complete(workspaceId, jobId);
      return 'done';
    }
    await tx.imports.record(workspaceId, jobId, await importBatch(tx, workspaceId, rows, actor), leaseMs);
    return 'more';
  });
}
