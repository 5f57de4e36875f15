import type { Actor } from '../actor.ts';
import type { PageRequest, Slice } from '../pagination.ts';
import type {
  ImportClaim,
  ImportFormat,
  ImportJob,
  ImportReportRow,
  ImportRowResult,
  PendingImportRow,
  StagedImportRow,
} from './import-job.ts';

/*
 * Bulk import jobs as the domain stores them: the port (storage/user-imports.queries.ts); the
 * job's values are in import-job.ts.
 */

/**
 * Bulk import jobs and their rows (docs/contract.md Part B, "Importing users in bulk"). Every
 * method takes the workspace id first, but for the workers' claim, which looks across
 * workspaces.
 */
export interface UserImportRepository {
  /**
   * Creates a queued job, not yet uploaded, leased to `owner` (the uploading process) for `leaseMs`.
   * @throws AppError `import_in_progress` (409) when the workspace has a queued or running job.
   */
  create(workspaceId: number, job: { readonly format: ImportFormat; readonly actor: Actor; readonly owner: string; readonly leaseMs: number }): Promise<ImportJob>;
  /** Stages rows of an uploading job (in one statement) and extends its lease. */
  stage(workspaceId: number, jobId: string, rows: readonly StagedImportRow[], leaseMs: number): Promise<void>;
  /** Marks a job's upload complete: `rowsTotal` rows, `rejected` of them invalid already; workers may claim it. */
  uploaded(workspaceId: number, jobId: string, rowsTotal: number, rejected: number): Promise<ImportJob>;
  /** Ends a job that is not finished as `failed` with `error`, dropping the payloads of its rows. */
  fail(workspaceId: number, jobId: string, error: string): Promise<void>;
  /** One job, or undefined. */
  find(workspaceId: number, jobId: string): Promise<ImportJob | undefined>;
  /** A page of the workspace's jobs, newest first, with their total. */
  findPage(workspaceId: number, page: PageRequest): Promise<Slice<ImportJob>>;
  /** Up to `limit` rows of a job's report after row `afterRow`, in file order. */
  report(workspaceId: number, jobId: string, afterRow: number, limit: number): Promise<ImportReportRow[]>;
  /** Cancels a queued or running job (its rows not yet processed are `not_attempted`); the job after, undefined if unknown. */
  cancel(workspaceId: number, jobId: string): Promise<ImportJob | undefined>;
  /**
   * Claims one uploaded job that no live lease holds (queued, or running under a lease that ran
   * out: its process died), skipping jobs another transaction holds, and leases it to `owner`;
   * first fails the uploads whose uploader's lease ran out.
   */
  claim(owner: string, leaseMs: number): Promise<ImportClaim | undefined>;
  /** Locks a running job still leased to `owner` until commit; undefined when it was cancelled or taken over. */
  lockLeased(workspaceId: number, jobId: string, owner: string): Promise<ImportJob | undefined>;
  /** Up to `limit` of a job's rows waiting for their batch, in file order. */
  pending(workspaceId: number, jobId: string, limit: number): Promise<PendingImportRow[]>;
  /** Records a batch's outcomes (clearing their payloads), adds them to the job's counts and extends its lease. */
  record(workspaceId: number, jobId: string, outcomes: readonly ImportRowResult[], leaseMs: number): Promise<void>;
  /** Completes a running job. */
  complete(workspaceId: number, jobId: string): Promise<void>;
}
