import { createReadStream, openSync, readSync, closeSync } from 'node:fs';
import { SingleBar } from 'cli-progress';
import { parse } from 'csv-parse/sync';
import type { ImportJob, ImportReportRow, WumClient } from 'wum/sdk';
import { UsageError } from './context.ts';
import { ImportFileError, importColumns } from '../../sdk/users-csv.ts';

export { summarize } from '../../sdk/users-import-rows.ts';
import type { RowReport } from '../../sdk/users-import-rows.ts';

/** Bytes read to find the header row of a CSV file. */
const HEADER_BYTES = 64 * 1024;

/** The upload's format, from the file's extension: JSON Lines for `.jsonl`/`.ndjson`, else CSV. */
export function importFormat(file: string): 'csv' | 'ndjson' {
  return /\.(jsonl|ndjson)$/i.test(file) ? 'ndjson' : 'csv';
}

/**
 * Checks what can be checked before the upload: the file can be read and, for CSV, its header
 * names the import's columns (see sdk/users-csv.ts). Reads only the file's beginning.
 * @throws UsageError when the file cannot be read, or its header is wrong.
 */
export function checkImportFile(file: string): void {
  let head: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const buffer = Buffer.alloc(HEADER_BYTES);
      head = buffer.subarray(0, readSync(fd, buffer, 0, HEADER_BYTES, 0)).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  if (importFormat(file) !== 'csv') return;
  let cells: string[] | undefined;
  try {
    [cells] = parse(head, { bom: true, skip_empty_lines: true, relax_column_count: true, to_line: 1 }) as string[][];
  } catch (error) {
    throw new UsageError(`${file} is not valid CSV: ${(error as Error).message}`);
  }
  try {
    importColumns(cells ? { cells, line: 1 } : undefined, file);
  } catch (error) {
    if (error instanceof ImportFileError) throw new UsageError(error.message);
    throw error;
  }
}

/** Shows a job's progress: a bar on a terminal, else a plain line on stderr at most every few seconds. */
function progressDisplay(): { update(job: ImportJob): void; stop(): void } {
  if (process.stderr.isTTY) {
    const bar = new SingleBar({
      stream: process.stderr,
      format: 'importing [{bar}] {percentage}% | {value}/{total} rows | ETA {eta_formatted}',
      hideCursor: true,
      clearOnComplete: true,
    });
    let started = false;
    return {
      update(job) {
        if (!job.rows_total) return;
        if (!started) bar.start(job.rows_total, job.rows_done);
        started = true;
        bar.update(job.rows_done);
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  const everyMs = 5_000;
  let last = Date.now();
  return {
    update(job) {
      if (Date.now() - last < everyMs) return;
      last = Date.now();
      process.stderr.write(`importing: ${job.rows_done} of ${job.rows_total ?? '?'} rows done\n`);
    },
    stop() {},
  };
}

/** How often the job's progress is read, in ms. */
const POLL_MS = 250;

/**
 * Imports a file through a job of the server (docs/api.md, "Importing users in bulk"): uploads
 * it as a stream, follows the job (a progress display on stderr) until it is over, and reads
 * its report.
 * @returns the job as it ended, and one report line per row in file order.
 * @throws WumApiError as the SDK's `users.imports` calls do (e.g. `import_in_progress`).
 */
export async function importFile(client: WumClient, file: string): Promise<{ job: ImportJob; reports: RowReport[] }> {
  let job = await client.users.imports.create(() => createReadStream(file), { format: importFormat(file) });
  const progress = progressDisplay();
  try {
    while (job.status === 'queued' || job.status === 'running') {
      progress.update(job);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      job = await client.users.imports.get(job.id);
    }
  } finally {
    progress.stop();
  }
  const rows = await client.users.imports.report(job.id);
  return { job, reports: rows.map(toRowReport) };
}

/** A report row of the API → a line of the CLI's report. */
function toRowReport(row: ImportReportRow): RowReport {
  return {
    line: row.row,
    email: row.email,
    outcome: row.outcome,
    ...(row.code === null ? {} : { code: row.code }),
    ...(row.detail === null ? {} : { detail: row.detail }),
  };
}
