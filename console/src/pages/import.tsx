import { useQueryClient } from '@tanstack/react-query';
import Papa from 'papaparse';
import { useId, useState } from 'react';
import { Link } from 'wouter-preact';
import { CSV_COLUMNS, ImportFileError, parseImportRecords, type CsvLine, type ParsedRow } from '../../../sdk/users-csv.ts';
import { importRows, summarize, type RowReport } from '../../../sdk/users-import-rows.ts';
import { usersApi } from '../api/users.ts';
import { USERS_KEY } from '../api/queries.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { RequiresScope } from '../components/scope-notice.tsx';
import { Page } from '../components/page.tsx';
import { ProgressBar } from '../components/progress-bar.tsx';
import { userHref } from '../format.ts';
import { Table } from '../components/table.tsx';

/** Rows sent at once: quick, and well inside the default per-key rate limit. */
const CONCURRENCY = 4;

/**
 * The records of a CSV text and the line each ends on (the header is line 1), as the CLI's
 * parser reports them, so both importers name the same lines. Blank lines are skipped.
 * @throws ImportFileError when the text is not valid CSV.
 */
function readCsv(text: string, name: string): CsvLine[] {
  const source = text.replace(/^\uFEFF/, '');
  const records: CsvLine[] = [];
  let counted = 0;
  let newlines = 0;
  const failures: string[] = [];
  Papa.parse<string[]>(source, {
    skipEmptyLines: true,
    step: (result) => {
      const end = source.slice(0, result.meta.cursor).replace(/\r?\n$/, '').length;
      for (let i = counted; i < end; i += 1) if (source.charCodeAt(i) === 10) newlines += 1;
      counted = Math.max(counted, end);
      records.push({ cells: result.data, line: newlines + 1 });
      for (const error of result.errors) failures.push(`line ${newlines + 1}: ${error.message}`);
    },
  });
  if (failures.length > 0) throw new ImportFileError(`${name} is not valid CSV: ${failures.join('; ')}`);
  return records;
}

const OUTCOME_LABELS: Record<RowReport['outcome'], string> = {
  added: 'Added',
  reactivated: 'Reactivated',
  skipped: 'Skipped (already active)',
  rejected: 'Rejected',
  not_attempted: 'Not attempted',
};

/** The per-row report: every row, what happened, and why when it did not go through. */
function Report({ reports }: { reports: readonly RowReport[] }) {
  const summary = summarize(reports);
  return (
    <section aria-labelledby="report-title">
      <h2 id="report-title">Report</h2>
      <p role="status">
        {summary.rows} rows: {summary.added} added, {summary.reactivated} reactivated, {summary.skipped} skipped (already active),{' '}
        {summary.rejected} rejected{summary.not_attempted ? `, ${summary.not_attempted} not attempted` : ''}.
      </p>
      <Table caption="Import report, one row per line of the file" columns={['Line', 'Email', 'Result', 'Why', 'Request id']}>
        {reports.map((report) => (
          <tr key={report.line} class={`outcome-${report.outcome}`}>
            <td>{report.line}</td>
            <th scope="row">
              {report.outcome === 'added' || report.outcome === 'reactivated' ? <Link href={userHref(report.email)}>{report.email}</Link> : report.email || '—'}
            </th>
            <td>{OUTCOME_LABELS[report.outcome]}</td>
            <td>{report.code ? <><code>{report.code}</code> {report.detail}</> : '—'}</td>
            <td>{report.requestId ? <code class="request-id">{report.requestId}</code> : '—'}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

type State =
  | { step: 'choose' }
  | { step: 'ready'; name: string; rows: ParsedRow[] }
  | { step: 'running'; name: string; done: number; total: number }
  | { step: 'done'; name: string; reports: RowReport[] };

/**
 * Imports a CSV file of users, the format of `wum users import` (columns
 * email,role,first_name,last_name,apps,expires_at; apps as `crm:admin;analytics:viewer`), with the CLI's
 * own rules (sdk/users-import-rows.ts): rows already active are skipped, deactivated ones
 * reactivated, bad rows rejected with the reason. A progress bar while it runs, then a report
 * of every row.
 */
export function ImportPage() {
  const fileId = useId();
  const queryClient = useQueryClient();
  const [state, setState] = useState<State>({ step: 'choose' });
  const [error, setError] = useState<unknown>();

  async function choose(file: File | undefined): Promise<void> {
    setError(undefined);
    if (!file) return setState({ step: 'choose' });
    try {
      setState({ step: 'ready', name: file.name, rows: parseImportRecords(readCsv(await file.text(), file.name), file.name) });
    } catch (failure) {
      setState({ step: 'choose' });
      setError(failure instanceof ImportFileError ? failure : new Error(`Could not read ${file.name}: ${String(failure)}`));
    }
  }

  async function start(name: string, rows: ParsedRow[]): Promise<void> {
    let done = 0;
    setState({ step: 'running', name, done, total: rows.length });
    try {
      const reports = await importRows({ users: usersApi }, rows, {
        concurrency: CONCURRENCY,
        onRow: () => setState({ step: 'running', name, done: (done += 1), total: rows.length }),
      });
      setState({ step: 'done', name, reports });
    } catch (failure) {
      setError(failure);
      setState({ step: 'choose' });
    } finally {
      void queryClient.invalidateQueries({ queryKey: [USERS_KEY] });
    }
  }

  const invalid = state.step === 'ready' ? state.rows.filter((row) => row.error).length : 0;
  return (
    <Page title="Import users">
      <RequiresScope scope="users:write" what="Importing users">
        <p>
          A CSV file with a header row naming the columns <code>{CSV_COLUMNS.join(',')}</code> (<code>email</code> and <code>role</code>{' '}
          required; <code>role</code> is <code>owner</code> or <code>non_owner</code>; <code>apps</code> as{' '}
          <code>crm:admin;analytics:viewer</code>). Users already active are skipped, deactivated ones are reactivated. The file{' '}
          <Link href="/users">Export CSV</Link> writes imports as it is.
        </p>
        <div class="field">
          <label for={fileId}>CSV file</label>
          <input
            id={fileId}
            type="file"
            accept=".csv,text/csv"
            disabled={state.step === 'running'}
            onChange={(event) => void choose(event.currentTarget.files?.[0])}
          />
        </div>
        {error !== undefined && <ErrorNotice error={error} title="Could not import" />}
        {state.step === 'ready' && (
          <div class="card">
            <p role="status">
              {state.name}: {state.rows.length} {state.rows.length === 1 ? 'row' : 'rows'}
              {invalid > 0 ? `, of which ${invalid} cannot be sent (see the report after the import)` : ''}.
            </p>
            <button type="button" class="button button-primary" disabled={state.rows.length === 0} onClick={() => void start(state.name, state.rows)}>
              Import {state.rows.length} {state.rows.length === 1 ? 'row' : 'rows'}
            </button>
          </div>
        )}
        {state.step === 'running' && <ProgressBar label={`Importing ${state.name}`} done={state.done} total={state.total} />}
        {state.step === 'done' && <Report reports={state.reports} />}
      </RequiresScope>
    </Page>
  );
}
