import type { Actor } from '../actor.ts';
import type { AddUserInput } from './user.ts';

/*
 * The values of a bulk import job (docs/contract.md Part B, "Importing users in bulk"): the job,
 * its rows as they are staged and processed, and its per-row report.
 */

/** Where a job stands: waiting for a worker, being worked on, or finished one way or another. */
export type ImportStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** The formats an upload may have: CSV with the CLI's columns, or one `POST /users` body per line. */
export type ImportFormat = 'csv' | 'ndjson';

/** What became of a row: as `wum users import` reports it; `not_attempted` for rows a cancel left. */
export type ImportOutcome = 'added' | 'reactivated' | 'skipped' | 'rejected' | 'not_attempted';

/** A bulk import job with its progress. */
export interface ImportJob {
  readonly id: string;
  readonly status: ImportStatus;
  readonly format: ImportFormat;
  /** The rows uploaded; null while the upload runs. */
  readonly rowsTotal: number | null;
  readonly rowsDone: number;
  readonly added: number;
  readonly reactivated: number;
  readonly skipped: number;
  readonly rejected: number;
  /** Why the job failed; null unless `failed`. */
  readonly error: string | null;
  readonly createdAt: Date;
  readonly startedAt: Date | null;
  readonly completedAt: Date | null;
}

/** Why a row is rejected: a problem's code and detail. */
export interface RowRejection {
  readonly code: string;
  readonly detail: string;
}

/** A row as the upload stages it: its line, its email, and the user to add or why it is invalid. */
export type StagedImportRow =
  | { readonly row: number; readonly email: string; readonly user: AddUserInput }
  | { readonly row: number; readonly email: string; readonly rejection: RowRejection };

/** A staged row waiting for its batch. */
export interface PendingImportRow {
  readonly row: number;
  readonly email: string;
  readonly user: AddUserInput;
}

/** What a batch decided for one row. */
export interface ImportRowResult {
  readonly row: number;
  readonly outcome: Exclude<ImportOutcome, 'not_attempted'>;
  readonly code?: string;
  readonly detail?: string;
}

/** One line of a job's report (the columns of `wum users import`'s report). */
export interface ImportReportRow {
  readonly row: number;
  readonly email: string;
  readonly outcome: ImportOutcome;
  readonly code: string | null;
  readonly detail: string | null;
}

/** A job a worker has claimed: where it is, and who started it (the actor of its changes). */
export interface ImportClaim {
  readonly workspaceId: number;
  readonly jobId: string;
  readonly actor: Actor;
}

/**
 * The limits of one upload (docs/contract.md Part B, "Importing users in bulk"): rows, bytes of
 * body, bytes of one row.
 */
export const IMPORT_LIMITS = {
  maxRows: 1_000_000,
  maxBytes: 512 * 1024 * 1024,
  maxRowBytes: 64 * 1024,
} as const;
