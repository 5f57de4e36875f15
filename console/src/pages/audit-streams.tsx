import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { auditStreamsApi, type AuditStream, type AuditStreamWithSecret, type StreamsSide } from '../api/audit-streams.ts';
import { ConfirmDialog, useConfirmation } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Page } from '../components/page.tsx';
import { RequiresScope } from '../components/scope-notice.tsx';
import { SecretOnce } from '../components/secret-once.tsx';
import { Table } from '../components/table.tsx';
import { dateTime } from '../format.ts';
import { AuditStreamForm } from './audit-stream-form.tsx';

/** How often the health is read again while the page is open: lag and failures show without a reload. */
const HEALTH_REFRESH_MS = 3000;

/** Where a stream sends, in one short phrase (the API never answers a credential). */
export function destinationLabel(d: AuditStream['destination']): string {
  switch (d.type) {
    case 's3':
      return `S3 ${d.bucket}/${d.prefix ?? ''}${d.endpoint ? ` at ${d.endpoint}` : ''}`;
    case 'syslog':
      return `Syslog ${d.host}:${d.port}`;
    case 'splunk_hec':
      return `Splunk HEC ${d.url}`;
    default:
      return d.url ?? d.type;
  }
}

/** A lag for people: "none", or the rows waiting and the age of the oldest. */
export function lagLabel(rows: number, seconds: number): string {
  if (rows === 0) return 'None';
  const age = seconds < 90 ? `${Math.round(seconds)} s` : seconds < 5400 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds / 3600)} h`;
  return `${rows} ${rows === 1 ? 'row' : 'rows'}, oldest ${age}`;
}

/** The stream's status as a badge: active, failing (since when) or paused (and what that means). */
function StreamStatus({ stream }: { stream: AuditStream }) {
  if (stream.status === 'active') return <span class="status status-active">Active</span>;
  if (stream.status === 'failing') {
    return (
      <>
        <span class="status status-failed">Failing</span>
        {stream.failing_since && <div class="muted">since {dateTime(stream.failing_since)}, retrying</div>}
      </>
    );
  }
  return (
    <>
      <span class="status status-paused">Paused</span>
      <div class="muted">nothing is sent until resumed</div>
    </>
  );
}

/** Picks the day a replay starts from and sends the request; says when retention removed rows. */
function ReplayForm({ side, stream, onReplayed, onClose }: { side: StreamsSide; stream: AuditStream; onReplayed: () => void; onClose: () => void }) {
  const id = useId();
  const [day, setDay] = useState('');
  const replay = useMutation({ mutationFn: (from: string) => auditStreamsApi(side).replay(stream.id, from), onSuccess: onReplayed });
  return (
    <form
      class="card form"
      aria-labelledby={`${id}-title`}
      onSubmit={(event) => {
        event.preventDefault();
        if (day) replay.mutate(`${day}T00:00:00Z`);
      }}
    >
      <h3 id={`${id}-title`}>Replay {stream.name}</h3>
      <p class="hint">
        The rows written from the start of that day (UTC) are sent again, in order, then everything after them. A receiver sees some rows
        twice: each carries its audit id to de-duplicate by.
      </p>
      {replay.isError && <ErrorNotice error={replay.error} title="Could not replay the stream" />}
      {replay.data && (
        <p class={`notice ${replay.data.complete ? 'notice-success' : ''}`} role="status">
          {stream.name} sends again from {day}: {replay.data.audit_stream.lag_rows} rows to send.
          {!replay.data.complete && ` Rows before ${dateTime(replay.data.oldest_kept_at)} are no longer kept (audit retention) and cannot be sent again.`}
        </p>
      )}
      <div class="field">
        <label for={`${id}-day`}>Replay from</label>
        <input id={`${id}-day`} type="date" required value={day} onInput={(event) => setDay(event.currentTarget.value)} />
      </div>
      <div class="actions">
        <button type="button" class="button" onClick={onClose}>
          Close
        </button>
        <button type="submit" class="button button-primary" disabled={!day || replay.isPending}>
          {replay.isPending ? 'Replaying…' : 'Send again from this day'}
        </button>
      </div>
    </form>
  );
}

/**
 * Audit streams: the workspace's, for its owner (scope `audit:write`), or every one, for the
 * operator (with the workspace each sends, or "every workspace"): each stream's name,
 * destination and format, its health (status badge active / failing / paused, lag, last
 * delivery, last error; read again every few seconds), and per stream: send a test row, pause
 * or resume, replay from a day, delete after a confirmation. **Add an audit stream** opens
 * {@link AuditStreamForm}; an https stream's signing secret is then shown once. The paused
 * state is explained under the list. Source: docs/api.md, "Audit streams"; docs/console.md,
 * "Audit streams".
 */
function AuditStreamsSection({ side }: { side: StreamsSide }) {
  const queryClient = useQueryClient();
  const key = ['audit-streams', side];
  const calls = auditStreamsApi(side);
  const operator = side === 'operator';
  const streams = useQuery({ queryKey: key, queryFn: ({ signal }) => calls.list(signal), refetchInterval: HEALTH_REFRESH_MS });
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState<AuditStreamWithSecret | undefined>();
  const [replaying, setReplaying] = useState<AuditStream | undefined>();
  const refresh = () => void queryClient.invalidateQueries({ queryKey: key });
  const setStatus = useMutation({ mutationFn: ({ stream, status }: { stream: AuditStream; status: 'active' | 'paused' }) => calls.setStatus(stream.id, status), onSettled: refresh });
  const test = useMutation({ mutationFn: (stream: AuditStream) => calls.test(stream.id) });
  const remove = useMutation({ mutationFn: (stream: AuditStream) => calls.remove(stream.id), onSettled: refresh });
  const confirmDelete = useConfirmation((stream: AuditStream) => remove.mutate(stream));
  const busy = setStatus.isPending || remove.isPending;
  const list = streams.data ?? [];
  return (
    <section aria-labelledby="streams-title">
      <div class="page-head">
        <h2 id="streams-title">Streams</h2>
        <div class="page-actions">
          <button type="button" class="button button-primary" onClick={() => setAdding(true)} disabled={adding}>
            Add an audit stream
          </button>
        </div>
      </div>
      <p>
        A stream sends every audit row {operator ? 'of one workspace, or of every workspace and the operator’s own,' : 'of the workspace'}, as it is written, to your SIEM: in order, at least once (each row carries its id to
        de-duplicate by), retried until the destination takes it.
      </p>
      {secret?.secret && <SecretOnce label={`Signing secret of ${secret.name}`} secret={secret.secret} what="secret" onDone={() => setSecret(undefined)} />}
      {adding && (
        <AuditStreamForm
          operator={operator}
          create={(body) => calls.create(body)}
          onCreated={(created) => {
            setAdding(false);
            setSecret(created);
            refresh();
          }}
          onCancel={() => setAdding(false)}
        />
      )}
      {replaying && <ReplayForm key={replaying.id} side={side} stream={replaying} onReplayed={refresh} onClose={() => setReplaying(undefined)} />}
      {test.isSuccess && test.data.ok && (
        <p class="notice notice-success" role="status">
          {test.variables.name} accepted the test row.
        </p>
      )}
      {test.isSuccess && !test.data.ok && (
        <div class="notice notice-error" role="alert">
          <p class="notice-title">{test.variables.name} refused the test row</p>
          <p class="notice-detail">{test.data.error}</p>
        </div>
      )}
      {remove.isSuccess && (
        <p class="notice notice-success" role="status">
          Deleted the stream {remove.variables.name}.
        </p>
      )}
      {test.isError && <ErrorNotice error={test.error} title="Could not send the test row" />}
      {setStatus.isError && <ErrorNotice error={setStatus.error} title="Could not change the stream" />}
      {remove.isError && <ErrorNotice error={remove.error} title="Could not delete the stream" />}
      {streams.isError && <ErrorNotice error={streams.error} title="Could not load the audit streams" onRetry={() => void streams.refetch()} />}
      {streams.data?.length === 0 && (
        <div class="empty">
          <p>No audit streams yet: add one to send the workspace’s audit trail to your SIEM as it is written.</p>
        </div>
      )}
      {list.length > 0 && (
        <Table caption="Audit streams, oldest first, with their health" columns={['Name', ...(operator ? ['Workspace'] : []), 'Destination', 'Status', 'Lag', 'Last delivery', 'Last error', 'Actions']}>
          {list.map((stream) => (
            <tr key={stream.id}>
              <th scope="row">
                {stream.name}
                <div class="muted">
                  {stream.format === 'ocsf' ? 'OCSF' : 'wum JSON'} · {stream.actions ? stream.actions.join(', ') : 'every action'}
                </div>
              </th>
              {operator && <td>{stream.workspace ?? 'Every workspace'}</td>}
              <td>
                <code class="url">{destinationLabel(stream.destination)}</code>
              </td>
              <td>
                <StreamStatus stream={stream} />
              </td>
              <td>{lagLabel(stream.lag_rows, stream.lag_seconds)}</td>
              <td>{stream.last_delivered_at ? dateTime(stream.last_delivered_at) : 'Never'}</td>
              <td>{stream.last_error ? <span class="stream-error">{stream.last_error}</span> : '—'}</td>
              <td class="row-actions">
                <button type="button" class="button" disabled={test.isPending} aria-label={`Send a test row to ${stream.name}`} onClick={() => test.mutate(stream)}>
                  Send test
                </button>
                {stream.status === 'paused' ? (
                  <button type="button" class="button" disabled={busy} aria-label={`Resume ${stream.name}`} onClick={() => setStatus.mutate({ stream, status: 'active' })}>
                    Resume
                  </button>
                ) : (
                  <button type="button" class="button" disabled={busy} aria-label={`Pause ${stream.name}`} onClick={() => setStatus.mutate({ stream, status: 'paused' })}>
                    Pause
                  </button>
                )}
                <button type="button" class="button" aria-label={`Replay ${stream.name}`} onClick={() => setReplaying(stream)}>
                  Replay
                </button>
                <button type="button" class="button button-danger" disabled={busy} aria-label={`Delete ${stream.name}`} onClick={() => confirmDelete.ask(stream)}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      {list.some((stream) => stream.status === 'paused') && (
        <p class="notice" role="note">
          A <strong>paused</strong> stream sends nothing, but it keeps its place: <strong>Resume</strong> sends every row written meanwhile,
          in order, as long as audit retention keeps them. The service pauses a stream by itself when it has failed without a success for a
          day (the server’s <code>AUDIT_STREAM_PAUSE_AFTER</code>); fix the destination (<strong>Send test</strong> says what it answers), then
          resume it.
        </p>
      )}
      <ConfirmDialog {...confirmDelete.dialog} title="Delete this audit stream?" confirmLabel="Delete the stream" danger>
        <p>
          Nothing more is sent to <code>{confirmDelete.subject ? destinationLabel(confirmDelete.subject.destination) : ''}</code>, and its
          place in the audit trail is forgotten: a new stream starts with the rows written after its creation. A batch already on its way may
          still arrive.
        </p>
      </ConfirmDialog>
    </section>
  );
}

/**
 * The **Audit streams** page: the owner's ({@link AuditStreamsSection} for a session with
 * `audit:write`, else the reason) or the operator's (every stream, of any workspace).
 */
export function AuditStreamsPage({ side }: { side: StreamsSide }) {
  return (
    <Page title="Audit streams">
      <RequiresScope scope="audit:write" what="Audit streams" operator={side === 'operator'}>
        <AuditStreamsSection side={side} />
      </RequiresScope>
    </Page>
  );
}
