/*
 * Sends the rows of a users import: the same for `wum users import` and the web console's
 * import, over any client with the SDK's `users.add`, `list` and `iterate` (the SDK's, or the
 * console's over the browser's fetch). No Node APIs: the console bundles this file.
 */
import { WumApiError } from './errors.ts';
import type { components, operations } from './schema.ts';
import { wasReactivated, type ParsedRow } from './users-csv.ts';

type User = components['schemas']['User'];
type NewUser = operations['addUser']['requestBody']['content']['application/json']['user'];
type ListUsersQuery = NonNullable<operations['listUsers']['parameters']['query']>;
type UserPage = operations['listUsers']['responses'][200]['content']['application/json'];

/** What an import needs of a client: the SDK's `WumClient` has it, and so has the console's. */
export interface ImportClient {
  readonly users: {
    add(user: NewUser): Promise<User>;
    list(query?: ListUsersQuery): Promise<UserPage>;
    iterate(query?: Omit<ListUsersQuery, 'page_number'>): AsyncIterable<User>;
  };
}

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
  /** The request id of the API's answer that rejected the row, for support. */
  readonly requestId?: string;
}

/** Counts per outcome. */
export type ImportSummary = Record<'rows' | RowOutcome, number>;

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
async function activeEmails(client: ImportClient, rows: number): Promise<Set<string> | undefined> {
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
  client: ImportClient,
  rows: readonly ParsedRow[],
  options: { concurrency: number; onRow?: () => void },
): Promise<RowReport[]> {
  const reports = new Array<RowReport>(rows.length);
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
      return { line, email, outcome: 'rejected', code: error.code, detail: describe(error), ...(error.requestId ? { requestId: error.requestId } : {}) };
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

