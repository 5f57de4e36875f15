import { formatApps } from '../../../sdk/users-csv.ts';
import { dateTime, roleLabel } from '../format.ts';

/** Fields not worth showing as a change (they change with every change). */
const IGNORED = new Set(['updated_at', 'version', 'created_at']);

/** Field names as people say them; others are shown with `_` as spaces. */
const FIELD_LABELS: Record<string, string> = {
  role: 'Role',
  apps: 'Product roles',
  status: 'Status',
  first_name: 'First name',
  last_name: 'Last name',
  email: 'Email',
  expires_at: 'Access ends',
  scopes: 'Scopes',
  url: 'URL',
  event_types: 'Event types',
  enabled: 'Enabled',
  client_id: 'Client ID',
  deactivate_after: 'Deactivate after',
  warn_before: 'Warn before',
  applies_to: 'Applies to',
};

/** Actions with a name of their own; the others read from their code (`webhook_endpoint.created` → "Webhook endpoint created"). */
const ACTION_LABELS: Record<string, string> = {
  'user.created': 'Added',
  'user.deactivated': 'Deactivated',
  'user.reactivated': 'Reactivated',
  'user.updated': 'Changed',
  'user.expiry_deferred': 'Expiry deferred',
  'user.access_expiring': 'Warned: access ending',
  'api_key.created': 'API key created',
  'api_key.revoked': 'API key revoked',
  'console.signed_in': 'Signed in to the console',
  'console.signed_out': 'Signed out of the console',
  'identity_provider.set': 'Identity provider set',
  'identity_provider.removed': 'Identity provider removed',
  'webhook_endpoint.secret_rotated': 'Webhook secret rotated',
  'webhook_delivery.redelivered': 'Webhook redelivered',
};

/** A product role grant as the audit records it. */
interface Grant {
  readonly name: string;
  readonly role: string;
}

const isGrants = (value: unknown): value is Grant[] =>
  Array.isArray(value) && value.every((v) => typeof v === 'object' && v !== null && 'name' in v && 'role' in v);

/** A field value, readable: roles for people, apps as `crm:admin;…`, times in local time, others as text. */
function show(key: string, value: unknown): string {
  if (value === null || value === undefined) return key === 'expires_at' ? 'never' : '—';
  if (isGrants(value)) return formatApps(value).replaceAll(';', ', ') || '(none)';
  if (key === 'role' && typeof value === 'string') return roleLabel(value);
  if (key.endsWith('_at') && typeof value === 'string') return dateTime(value);
  if (Array.isArray(value)) return value.join(', ');
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The fields an event changed (for a creation or removal: those it set or had). */
function changedFields(before: unknown, after: unknown): string[] {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  return [...new Set([...Object.keys(b), ...Object.keys(a)])].filter((key) => !IGNORED.has(key) && JSON.stringify(b[key]) !== JSON.stringify(a[key]));
}

const fieldLabel = (key: string) => FIELD_LABELS[key] ?? key.replaceAll('_', ' ');

/**
 * An audit action named for people: "Added", "Deactivated"; a user change by what it changed
 * ("Role changed", "Product roles changed", "Role and product roles changed"); other actions
 * from their code.
 */
export function actionLabel(action: string, before?: unknown, after?: unknown): string {
  if (action === 'user.updated') {
    const fields = changedFields(before, after);
    const status = (after as { status?: string } | null)?.status;
    if (fields.includes('status')) return status === 'deactivated' ? 'Deactivated' : 'Reactivated';
    if (fields.length > 0 && fields.length <= 2 && fields.every((f) => f === 'role' || f === 'apps')) {
      const named = fields.map((f) => (f === 'role' ? 'role' : 'product roles')).sort((x, y) => (x === 'role' ? -1 : y === 'role' ? 1 : 0));
      const text = named.join(' and ');
      return `${text[0]!.toUpperCase()}${text.slice(1)} changed`;
    }
  }
  const known = ACTION_LABELS[action];
  if (known) return known;
  const [subject = action, verb = ''] = action.split('.');
  const text = `${subject.replaceAll('_', ' ')} ${verb.replaceAll('_', ' ')}`.trim();
  return `${text[0]?.toUpperCase() ?? ''}${text.slice(1)}`;
}

/** Product roles added and removed, as `+ crm:admin` / `− analytics:viewer`. */
function GrantsDiff({ before, after }: { before: unknown; after: unknown }) {
  const key = (g: Grant) => `${g.name}:${g.role}`;
  const was = new Set((isGrants(before) ? before : []).map(key));
  const now = new Set((isGrants(after) ? after : []).map(key));
  const added = [...now].filter((g) => !was.has(g));
  const removed = [...was].filter((g) => !now.has(g));
  return (
    <>
      {added.map((g) => (
        <span key={`+${g}`}>
          <ins>+ {g}</ins>{' '}
        </span>
      ))}
      {removed.map((g) => (
        <span key={`-${g}`}>
          <del>− {g}</del>{' '}
        </span>
      ))}
      {added.length + removed.length === 0 && <span>(same roles, other details)</span>}
    </>
  );
}

/**
 * What an audit event changed, one line per field as a diff people read ("Role: <del>Non-owner</del>
 * → <ins>Owner</ins>", product roles as roles added and removed), from its `before` and
 * `after` records; a creation lists the fields it set, a removal those it had.
 */
export function AuditChanges({ before, after }: { before: unknown; after: unknown }) {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  const keys = changedFields(before, after);
  if (keys.length === 0) return <span>—</span>;
  return (
    <ul class="changes">
      {keys.map((key) => (
        <li key={key}>
          <span class="change-field">{fieldLabel(key)}:</span>{' '}
          {before && after && key === 'apps' ? (
            <GrantsDiff before={b[key]} after={a[key]} />
          ) : (
            <>
              {before !== null && before !== undefined && <del>{show(key, b[key])}</del>}
              {before && after ? ' → ' : ''}
              {after !== null && after !== undefined ? <ins>{show(key, a[key])}</ins> : ' (removed)'}
            </>
          )}
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
  /** The workspace column's content (the operator's view of every workspace). */
  readonly workspace?: string;
}

/** One audit event as a table row: when, (workspace,) action, actor, (target,) changes, request id. */
export function AuditEventRow({ event, showTarget, workspace }: AuditEventRowProps) {
  return (
    <tr>
      <td>{dateTime(event.occurred_at)}</td>
      {workspace !== undefined && <td>{workspace}</td>}
      <td>
        {actionLabel(event.action, event.before, event.after)} <code class="hint">{event.action}</code>
      </td>
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
