import { readFileSync } from 'node:fs';
import { SingleBar } from 'cli-progress';
import { parse } from 'csv-parse/sync';
import { WumApiError, type NewUser, type WumClient } from 'wum/sdk';
import { UsageError } from './context.ts';
import { wasReactivated } from './output.ts';
import { CSV_COLUMNS, recordToUser, REQUIRED_COLUMNS, RowError, type CsvRecord } from './users-csv.ts';

/** What happened to one row. */
export type RowOutcome = 'added' | 'reactivated' | 'skipped' | 'rejected' | 'not_attempted';

/** One line of the import report. */
export interface RowReport {
  /** Line of the file the row ends on (the header is line 1). */
  readonly line: number;
  readonly email: string;
  readonly outcome: RowOutcome;
  /** Why a row was skipped, rejected or not attempted: the API's problem code or the CLI's own. */
  readonly code?: string;
  readonly detail?: string;
}

/** Counts per outcome. */
export type ImportSummary = Record<'rows' | RowOutcome, number>;

/** A data row of the file: the user to send, or why it cannot be sent. */
interface ParsedRow {
  readonly line: number;
  readonly email: string;
  readonly user?: NewUser;
  readonly error?: RowError;
}

/**
 * Reads an import file: a header row naming the columns (any order; `email` and `role`
 * required, `first_name`, `last_name`, `apps` optional, nothing else), then one user per row.
 * A row with the wrong number of cells, malformed apps, or the email of an earlier row
 * (compared case-insensitively, as the API does) is rejected before anything is sent.
 * @throws UsageError when the file cannot be read or its header is wrong.
 */
export function readImportFile(file: string): ParsedRow[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    records = parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true, info: true }) as unknown as typeof records;
  } catch (error) {
    throw new UsageError(`${file} is not valid CSV: ${(error as Error).message}`);
  }
  const [header, ...data] = records;
  if (!header) throw new UsageError(`${file} is empty: expected a header row ${CSV_COLUMNS.join(',')}`);
  const columns = header.record.map((c) => c.trim().toLowerCase());
  const unknown = columns.filter((c) => !(CSV_COLUMNS as readonly string[]).includes(c));
  const missing = REQUIRED_COLUMNS.filter((c) => !columns.includes(c));
  if (unknown.length > 0 || missing.length > 0 || new Set(columns).size !== columns.length) {
    throw new UsageError(
      `${file}: the header must name the columns ${CSV_COLUMNS.join(',')} (email and role required, each once)` +
        (unknown.length ? `; unknown: ${unknown.join(', ')}` : '') +
        (missing.length ? `; missing: ${missing.join(', ')}` : ''),
    );
  }
  const firstLine = new Map<string, number>();
  return data.map(({ record: cells, info }) => {
    const record = Object.fromEntries(columns.map((c, i) => [c, cells[i]])) as CsvRecord;
    const email = (record.email ?? '').trim();
    const line = info.lines;
    try {
      if (cells.length !== columns.length) {
        throw new RowError('invalid_row', `the row has ${cells.length} cells, the header ${columns.length}`);
      }
      const key = email.toLowerCase();
      const earlier = firstLine.get(key);
      if (earlier !== undefined) throw new RowError('duplicate_row', `the same email as line ${earlier}`);
      firstLine.set(key, line);
      return { line, email, user: recordToUser(record) };
    } catch (error) {
      if (error instanceof RowError) return { line, email, error };
      throw error;
    }
  });
}

/** Codes after which every further row would fail the same way: the import stops. */
const FATAL_CODES = new Set(['network_error', 'timeout', 'missing_api_key', 'invalid_api_key', 'workspace_not_found']);

/** The detail of an API error, with its field errors. */
function describe(error: WumApiError): string {
  const fields = error.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
  return fields ? `${error.detail} (${fields})` : error.detail;
}

/**
 * The emails of the workspace's active users, read page by page, when that costs fewer
 * requests than the rows to import; otherwise undefined (each row's own add then finds out).
 * Rows already active are then skipped without a request, which makes a re-run cheap.
 */
async function activeEmails(client: WumClient, rows: number): Promise<Set<string> | undefined> {
  const pageSize = 100;
  const { total_records: active } = (await client.users.list({ status: 'active', page_size: 1 })).pagination;
  if (Math.ceil(active / pageSize) > rows) return undefined;
  const emails = new Set<string>();
  for await (const user of client.users.iterate({ status: 'active', page_size: pageSize })) emails.add(user.email.toLowerCase());
  return emails;
}

/**
 * Adds (or reactivates) the user of every valid row, `concurrency` at a time, relying on the
 * SDK to wait out 429s. Rows whose email is already active are skipped, so a re-run after a
 * failure picks up where the last one stopped. An error that every row would meet (the server
 * unreachable, a bad key) stops the import: the rows that met it are rejected with it, and the
 * rows not yet sent are reported `not_attempted`.
 * @returns one report per row, in file order.
 */
export async function importRows(
  client: WumClient,
  rows: readonly ParsedRow[],
  options: { concurrency: number; onRow?: () => void },
): Promise<RowReport[]> {
  const reports: RowReport[] = new Array(rows.length);
  let stopped: WumApiError | undefined;
  const active = await activeEmails(client, rows.length);
  let next = 0;

  async function importOne(row: ParsedRow): Promise<RowReport> {
    const { line, email } = row;
    if (row.error) return { line, email, outcome: 'rejected', code: row.error.code, detail: row.error.message };
    if (stopped) return { line, email, outcome: 'not_attempted', code: stopped.code, detail: `the import stopped: ${stopped.detail}` };
    if (active?.has(email.toLowerCase())) return { line, email, outcome: 'skipped', code: 'user_already_exists', detail: 'already active' };
    try {
      const user = await client.users.add(row.user!);
      return { line, email, outcome: wasReactivated(user) ? 'reactivated' : 'added' };
    } catch (error) {
      if (!(error instanceof WumApiError)) throw error;
      if (error.code === 'user_already_exists') return { line, email, outcome: 'skipped', code: error.code, detail: 'already active' };
      if (FATAL_CODES.has(error.code)) stopped ??= error;
      return { line, email, outcome: 'rejected', code: error.code, detail: describe(error) };
    }
  }

  async function worker(): Promise<void> {
    while (next < rows.length) {
      const index = next;
      next += 1;
      reports[index] = await importOne(rows[index]!);
      options.onRow?.();
    }
  }

  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  return reports;
}

/** Counts the outcomes of a report. */
export function summarize(reports: readonly RowReport[]): ImportSummary {
  const summary: ImportSummary = { rows: reports.length, added: 0, reactivated: 0, skipped: 0, rejected: 0, not_attempted: 0 };
  for (const r of reports) summary[r.outcome] += 1;
  return summary;
}

/** A progress bar on stderr while rows complete, only when stderr is a terminal. */
export function progressBar(total: number): { tick(): void; stop(): void } {
  if (!process.stderr.isTTY || total === 0) return { tick() {}, stop() {} };
  const bar = new SingleBar({
    stream: process.stderr,
    format: 'importing [{bar}] {percentage}% | {value}/{total} rows | ETA {eta_formatted}',
    hideCursor: true,
    clearOnComplete: true,
  });
  bar.start(total, 0);
  return { tick: () => bar.increment(), stop: () => bar.stop() };
}
