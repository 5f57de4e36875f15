import { formatApps } from '../../../sdk/users-csv.ts';
import { dateTime } from '../format.ts';

/** A field value of an audit record, readable: apps as `crm:admin;…`, others as text. */
function show(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (Array.isArray(value) && value.every((v) => typeof v === 'object' && v !== null && 'name' in v && 'role' in v)) {
    return formatApps(value as Array<{ name: string; role: string }>) || '(none)';
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Fields not worth showing as a change (they change with every change). */
const IGNORED = new Set(['updated_at', 'version', 'created_at']);

/**
 * What an audit event changed, one line per field (`role: non_owner → owner`), from its
 * `before` and `after` records; a creation or removal lists the fields it set or had.
 */
export function AuditChanges({ before, after }: { before: unknown; after: unknown }) {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])].filter(
    (key) => !IGNORED.has(key) && JSON.stringify(b[key]) !== JSON.stringify(a[key]),
  );
  if (keys.length === 0) return <span>—</span>;
  return (
    <ul class="changes">
      {keys.map((key) => (
        <li key={key}>
          <code>{key}</code>: {before ? `${show(b[key])} → ` : ''}
          {after ? show(a[key]) : '(removed)'}
        </li>
      ))}
    </ul>
  );
}

/** The fields of an audit event that {@link AuditEventRow} shows. */
export interface AuditEventRowProps {
  readonly event: {
    readonly occurred_at: string;
    readonly action: string;
    readonly actor_type: string;
    readonly actor?: { readonly type: string; readonly label: string | null };
    readonly target_type: string;
    readonly target_id: string;
    readonly before?: unknown;
    readonly after?: unknown;
    readonly request_id?: string | null;
  };
  /** Shows the target's type and id (the audit log; a user's history leaves it out). */
  readonly showTarget?: boolean;
}

/** One audit event as a table row: when, action, actor, (target,) changes, request id. */
export function AuditEventRow({ event, showTarget }: AuditEventRowProps) {
  return (
    <tr>
      <td>{dateTime(event.occurred_at)}</td>
      <td>{event.action}</td>
      <td>
        {event.actor?.label && event.actor.label !== event.actor.type ? (
          <>
            {event.actor.label} <span class="hint">({event.actor.type})</span>
          </>
        ) : (
          event.actor_type
        )}
      </td>
      {showTarget && (
        <td>
          {event.target_type} <code>{event.target_id}</code>
        </td>
      )}
      <td>
        <AuditChanges before={event.before} after={event.after} />
      </td>
      <td>
        <code class="request-id">{event.request_id ?? '—'}</code>
      </td>
    </tr>
  );
}
