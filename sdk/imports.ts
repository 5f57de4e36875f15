/*
 * Bulk import jobs of a workspace's users (docs/api.md, "Importing users in bulk"): upload a
 * file, follow its job, read its report, cancel it.
 */
import type { operations } from './schema.ts';
import type { Transport } from './transport.ts';

/** A bulk import job and its progress. */
export type ImportJob = operations['getUserImport']['responses'][200]['content']['application/json'];
/** One page of import jobs with its pagination envelope. */
export type ImportJobPage = operations['listUserImports']['responses'][200]['content']['application/json'];
/** Query of {@link ImportsApi.list}: `page_number`, `page_size`. */
export type ListImportsQuery = NonNullable<operations['listUserImports']['parameters']['query']>;
/** One row of a job's report: `{row, email, outcome, code, detail}`. */
export type ImportReportRow = operations['getUserImportReport']['responses'][200]['content']['application/json']['rows'][number];

/**
 * What an upload sends: the whole file as text or bytes, or a function that opens it as a
 * stream (called again for each retry of a `429`/`503`, so a stream is never sent twice).
 */
export type ImportBody = string | Uint8Array | (() => ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>);

/** Options of {@link ImportsApi.create}. */
export interface CreateImportOptions {
  /** `csv` (the columns of `wum users import`, the default) or `ndjson` (one `POST /users` body per line). */
  readonly format?: 'csv' | 'ndjson';
}

/** The import jobs of the workspace. */
export interface ImportsApi {
  /**
   * Uploads a file (streamed when `body` is a function) and starts its job.
   * @returns the queued job; poll {@link ImportsApi.get} for its progress.
   * @throws WumApiError `import_in_progress` (409) while another job is queued or running;
   *   `invalid_import_file` (422); `payload_too_large` (413).
   */
  create(body: ImportBody, options?: CreateImportOptions): Promise<ImportJob>;
  /**
   * One job.
   * @throws WumApiError `import_not_found` (404).
   */
  get(id: string): Promise<ImportJob>;
  /** One page of the workspace's jobs, newest first. */
  list(query?: ListImportsQuery): Promise<ImportJobPage>;
  /**
   * The job's per-row report, in file order.
   * @throws WumApiError `import_not_found` (404).
   */
  report(id: string): Promise<ImportReportRow[]>;
  /**
   * Cancels a queued or running job.
   * @throws WumApiError `import_not_found` (404); `import_finished` (409).
   */
  cancel(id: string): Promise<ImportJob>;
}

const MEDIA_TYPES = { csv: 'text/csv', ndjson: 'application/x-ndjson' } as const;

/** The import jobs over a client's transport; `prefix` is the API's path. */
export function importsApi({ api, call }: Transport, prefix: string): ImportsApi {
  const safe = { replayable: true };
  const jobPath = (id: string) => `${prefix}/users/imports/${encodeURIComponent(id)}`;
  return {
    async create(body, options = {}) {
      const type = MEDIA_TYPES[options.format ?? 'csv'];
      // Not replayed after a network failure: the first upload may have started a job.
      const { data } = await call(`POST ${prefix}/users/imports`, { replayable: false }, (signal) =>
        api.POST('/api/external/v2/users/imports', {
          body: (typeof body === 'function' ? body() : body) as never,
          bodySerializer: (b: unknown) => b,
          headers: { 'Content-Type': type },
          // A streamed request body needs half duplex (Fetch standard, "RequestInit").
          duplex: 'half',
          signal,
        } as never),
      );
      return data as unknown as ImportJob;
    },
    async get(id) {
      const { data } = await call(`GET ${jobPath(id)}`, safe, (signal) =>
        api.GET('/api/external/v2/users/imports/{id}', { params: { path: { id } }, signal }),
      );
      return data!;
    },
    async list(query = {}) {
      const { data } = await call(`GET ${prefix}/users/imports`, safe, (signal) =>
        api.GET('/api/external/v2/users/imports', { params: { query }, signal }),
      );
      return data!;
    },
    async report(id) {
      const { data } = await call(`GET ${jobPath(id)}/report`, safe, (signal) =>
        api.GET('/api/external/v2/users/imports/{id}/report', { params: { path: { id } }, signal }),
      );
      return data!.rows;
    },
    async cancel(id) {
      const { data } = await call(`POST ${jobPath(id)}/cancel`, safe, (signal) =>
        api.POST('/api/external/v2/users/imports/{id}/cancel', { params: { path: { id } }, signal }),
      );
      return data!;
    },
  };
}
