import { Type } from '@sinclair/typebox';
import type { ImportJob } from '../../core/users/import-job.ts';
import { NullableTimestamp, StringEnum, Timestamp } from './common.ts';

/** A job on the wire (docs/api.md, "Importing users in bulk"). */
export const ImportJobSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'The job\'s id.' }),
    status: StringEnum(['queued', 'running', 'completed', 'failed', 'cancelled'], { description: 'Where the job stands.' }),
    format: StringEnum(['csv', 'ndjson'], { description: 'The upload\'s format.' }),
    rows_total: Type.Union([Type.Integer(), Type.Null()], { description: 'Rows uploaded; null while the upload runs.' }),
    rows_done: Type.Integer({ description: 'Rows with an outcome so far (the rows invalid in themselves count from the upload on).' }),
    added: Type.Integer(),
    reactivated: Type.Integer(),
    skipped: Type.Integer({ description: 'Rows whose user was active already (`user_already_exists`).' }),
    rejected: Type.Integer({ description: 'Rows refused, each with its problem\'s code in the report.' }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why the job failed; null unless `failed`.' }),
    created_at: Timestamp,
    started_at: NullableTimestamp,
    completed_at: NullableTimestamp,
  },
  { $id: 'ImportJob', description: 'A bulk import of users and its progress.' },
);

/** The job of the OpenAPI document's examples. */
export const JOB_EXAMPLE = {
  id: '6f1e2b3c-4d5e-4a51-9d7a-0b9e7f3c4c2e',
  status: 'running',
  format: 'csv',
  rows_total: 100000,
  rows_done: 42000,
  added: 41800,
  reactivated: 12,
  skipped: 150,
  rejected: 38,
  error: null,
  created_at: '2025-01-15T09:30:00.000Z',
  started_at: '2025-01-15T09:30:04.000Z',
  completed_at: null,
};

/** A job → its wire shape. */
export function toWireJob(job: ImportJob) {
  return {
    id: job.id,
    status: job.status,
    format: job.format,
    rows_total: job.rowsTotal,
    rows_done: job.rowsDone,
    added: job.added,
    reactivated: job.reactivated,
    skipped: job.skipped,
    rejected: job.rejected,
    error: job.error,
    created_at: job.createdAt,
    started_at: job.startedAt,
    completed_at: job.completedAt,
  };
}

