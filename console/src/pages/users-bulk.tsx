import { useState } from 'react';
import { usersApi } from '../api/users.ts';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ProgressBar } from '../components/progress-bar.tsx';

/** How one deactivation went. */
interface Failure {
  readonly email: string;
  readonly error: unknown;
}

type Run = { phase: 'running'; done: number } | { phase: 'finished'; done: number; failures: Failure[] };

/**
 * Deactivates the selected users after a confirmation, one `DELETE /users/{email}` each, with
 * a progress bar and a report of those that failed (a last owner, say) with each one's
 * detail and request id. Shown while rows are selected, and while its last report stands.
 */
export function BulkDeactivate({ emails, onDone }: { emails: readonly string[]; onDone: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [run, setRun] = useState<Run | undefined>();

  async function deactivate(targets: readonly string[]): Promise<void> {
    setConfirming(false);
    const failures: Failure[] = [];
    let done = 0;
    setRun({ phase: 'running', done });
    for (const email of targets) {
      try {
        await usersApi.remove(email);
      } catch (error) {
        failures.push({ email, error });
      }
      done += 1;
      setRun({ phase: 'running', done });
    }
    setRun({ phase: 'finished', done, failures });
    onDone();
  }

  if (emails.length === 0 && run?.phase !== 'finished') return null;
  const count = emails.length;
  const noun = count === 1 ? 'user' : 'users';
  return (
    <section class="bulk" aria-label="Selected users">
      {count > 0 && run?.phase !== 'running' && (
        <div class="bulk-bar">
          <p>
            {count} {noun} selected
          </p>
          <button type="button" class="button button-danger" onClick={() => setConfirming(true)}>
            Deactivate selected
          </button>
        </div>
      )}
      {run?.phase === 'running' && <ProgressBar label="Deactivating users" done={run.done} total={count} />}
      {run?.phase === 'finished' && (
        <div class="bulk-report" role="status">
          <p>
            Deactivated {run.done - run.failures.length} of {run.done} {run.done === 1 ? 'user' : 'users'}.
          </p>
          {run.failures.map((failure) => (
            <ErrorNotice key={failure.email} error={failure.error} title={`Could not deactivate ${failure.email}`} />
          ))}
          <button type="button" class="button" onClick={() => setRun(undefined)}>
            Dismiss
          </button>
        </div>
      )}
      <ConfirmDialog
        open={confirming}
        title={`Deactivate ${count} ${noun}?`}
        confirmLabel={`Deactivate ${count} ${noun}`}
        danger
        onCancel={() => setConfirming(false)}
        onConfirm={() => void deactivate([...emails])}
      >
        <p>
          They lose access at once and leave the default listing. Their data is kept: you can reactivate any of them later.
        </p>
      </ConfirmDialog>
    </section>
  );
}
