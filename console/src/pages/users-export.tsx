import Papa from 'papaparse';
import { useRef, useState } from 'react';
import { CSV_COLUMNS, userToRecord } from '../../../sdk/users-csv.ts';
import { usersApi, type ListUsersQuery } from '../api/users.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ProgressBar } from '../components/progress-bar.tsx';

/** Saves `text` as a file through a temporary link (the browser's download, no server round trip). */
function download(name: string, text: string): void {
  const href = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = href;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

/**
 * Exports the users the current filters find (every page, 100 a request) as the CSV that
 * `wum users export` writes and both importers read, with a progress bar and a way to stop.
 */
export function ExportButton({ filters, total }: { filters: Omit<ListUsersQuery, 'page_number' | 'page_size'>; total?: number }) {
  const [progress, setProgress] = useState<number | undefined>();
  const [error, setError] = useState<unknown>();
  const abort = useRef<AbortController | undefined>(undefined);

  async function run(): Promise<void> {
    const controller = new AbortController();
    abort.current = controller;
    setError(undefined);
    setProgress(0);
    const rows: string[][] = [];
    try {
      for await (const user of usersApi.iterate(filters, controller.signal)) {
        rows.push(userToRecord(user));
        if (rows.length % 100 === 0) setProgress(rows.length);
      }
      download('users.csv', Papa.unparse({ fields: [...CSV_COLUMNS], data: rows }, { newline: '\n' }) + '\n');
    } catch (failure) {
      if (!controller.signal.aborted) setError(failure);
    } finally {
      setProgress(undefined);
    }
  }

  return (
    <>
      {progress === undefined ? (
        <button type="button" class="button" onClick={() => void run()}>
          Export CSV
        </button>
      ) : (
        <div class="export-progress">
          <ProgressBar label="Exporting users" done={progress} {...(total === undefined ? {} : { total })} />
          <button type="button" class="button" onClick={() => abort.current?.abort()}>
            Stop the export
          </button>
        </div>
      )}
      {error !== undefined && <ErrorNotice error={error} title="Could not export the users" />}
    </>
  );
}
