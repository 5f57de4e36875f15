import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { adminApi, type ActorType, type AuditEvent, type AuditQuery } from '../api/admin.ts';
import { whereKey, type Where } from '../api/where.ts';
import { AuditEventRow } from '../components/audit-changes.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ScopeNotice } from '../components/scope-notice.tsx';
import { useScopes } from '../api/session.ts';
import { Page } from '../components/page.tsx';
import { Pager, PAGE_SIZES } from '../components/pager.tsx';
import { choiceParam, positiveParam, useUrlParams } from '../url-state.ts';
import { Table } from '../components/table.tsx';

/**
 * Every kind of actor, named for people. The compiler holds the keys to the API's `actor_type`
 * values from the generated types both ways (none missing, none extra), so the filter cannot
 * send a value the API refuses.
 */
const ACTOR_LABELS = {
  person: 'Person (owner)',
  api_key: 'API key',
  scim: 'SCIM',
  operator: 'Operator',
  system: 'System',
  policy: 'Policy',
} satisfies Record<ActorType, string>;
const ACTOR_TYPES = Object.keys(ACTOR_LABELS) as ActorType[];

/** Actions the audit trail records today, offered as suggestions (any text is accepted). */
const ACTIONS = [
  'user.created',
  'user.updated',
  'user.deactivated',
  'user.reactivated',
  'api_key.created',
  'api_key.revoked',
  'console.signed_in',
  'console.signed_out',
  'identity_provider.set',
  'identity_provider.removed',
  'inactivity_policy.set',
  'inactivity_policy.removed',
  'expiry_policy.set',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'workspace.created',
  'workspace.deleted',
  'product.created',
  'product.updated',
  'product.deleted',
];

/** The order in the URL (`order=oldest`); newest first when absent. */
const ORDERS = ['newest', 'oldest'] as const;

interface Filters {
  workspace: string;
  action: string;
  actor_type: '' | ActorType;
  target_id: string;
  /** First day shown (`YYYY-MM-DD`, the browser's time zone), or ''. */
  since: string;
  /** Last day shown, included, or ''. */
  until: string;
}

const NO_FILTERS: Filters = { workspace: '', action: '', actor_type: '', target_id: '', since: '', until: '' };

/**
 * The instant a day of a date input starts at in the browser's time zone, `days` later, as the
 * API's RFC 3339; undefined for anything but a date (a hand-edited URL).
 */
function dayStart(day: string, days = 0): string | undefined {
  if (!/^\d{4}-\d\d-\d\d$/.test(day)) return undefined;
  const start = new Date(`${day}T00:00:00`);
  if (Number.isNaN(start.getTime())) return undefined;
  start.setDate(start.getDate() + days);
  return start.toISOString();
}

/** The workspace column of the operator's view of every workspace: the API's `workspace`, '—' for the catalogue's events. */
const workspaceOf = (event: AuditEvent): string => event.workspace ?? '—';

/**
 * The audit log: the operator's of every workspace (`where` absent: with a workspace filter and
 * column), or one workspace's trail (the operator's from the workspace's page, or the owner's
 * own with `audit:read`: docs/console.md, "Owners' self-service"). Newest first unless the
 * order is turned; narrowed by action, actor type (the API's values), target and days; the filters,
 * the order and the page in the URL. Each change reads as a diff with an action named for
 * people. Source: docs/contract.md Part B, Retries, limits and audit.
 */
export function AuditPage({ where }: { where?: Where }) {
  const url = useUrlParams();
  const { params } = url;
  const everyWorkspace = where === undefined;
  const filters: Filters = {
    workspace: everyWorkspace ? (params.get('workspace') ?? '') : '',
    action: params.get('action') ?? '',
    actor_type: choiceParam<Filters['actor_type']>(params, 'actor_type', ACTOR_TYPES, ''),
    target_id: params.get('target_id') ?? '',
    since: params.get('since') ?? '',
    until: params.get('until') ?? '',
  };
  // The API's `until` is exclusive: the day after the last day shown.
  const since = dayStart(filters.since);
  const until = dayStart(filters.until, 1);
  const order = choiceParam(params, 'order', ORDERS, 'newest');
  const size = positiveParam(params, 'size', 30);
  const query: AuditQuery = {
    page_number: positiveParam(params, 'page', 1),
    page_size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 30,
    sort: order === 'newest' ? '-occurred_at' : 'occurred_at',
    ...(filters.workspace ? { workspace: filters.workspace } : {}),
    ...(filters.action ? { action: filters.action } : {}),
    ...(filters.actor_type ? { actor_type: filters.actor_type } : {}),
    ...(filters.target_id ? { target_id: filters.target_id } : {}),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
  };
  // An owner's session reads its trail with `audit:read`; the operator reads every trail.
  const scopes = useScopes(where?.as !== 'owner');
  const lacking = scopes.lacking('audit:read');
  const events = useQuery({
    queryKey: ['audit', where ? whereKey(where) : 'all', query],
    queryFn: ({ signal }) => (where ? adminApi.listWorkspaceAuditEvents(where, query, signal) : adminApi.listAuditEvents(query, signal)),
    placeholderData: keepPreviousData,
    enabled: scopes.known && !lacking,
  });
  const { register, handleSubmit, reset } = useForm<Filters>({ values: filters });
  const apply = (values: Filters) => url.update({ ...values, page: undefined });
  const orderText = order === 'newest' ? 'newest first' : 'oldest first';
  const title = where?.as === 'owner' ? 'Audit trail' : where ? `Audit trail of ${where.subdomain}` : 'Audit log';
  if (lacking) {
    return (
      <Page title={title}>
        <ScopeNotice what="The audit trail" reason={lacking} />
      </Page>
    );
  }
  const columns = ['When', ...(everyWorkspace ? ['Workspace'] : []), 'Action', 'Actor', 'Target', 'Changes', 'Request id'];
  return (
    <Page
      title={title}
      actions={
        <button type="button" class="button" onClick={() => url.update({ order: order === 'newest' ? 'oldest' : undefined, page: undefined })}>
          {order === 'newest' ? 'Show oldest first' : 'Show newest first'}
        </button>
      }
    >
      <form class="filters" role="search" aria-label="Filter the audit log" onSubmit={handleSubmit(apply)}>
        {everyWorkspace && (
          <div class="field">
            <label for="audit-workspace">Workspace</label>
            <input id="audit-workspace" autoComplete="off" spellcheck={false} {...register('workspace')} />
          </div>
        )}
        <div class="field">
          <label for="audit-action">Action</label>
          <input id="audit-action" list="audit-actions" autoComplete="off" spellcheck={false} {...register('action')} />
          <datalist id="audit-actions">
            {ACTIONS.map((action) => (
              <option key={action} value={action} />
            ))}
          </datalist>
        </div>
        <div class="field">
          <label for="audit-actor">Actor type</label>
          <select id="audit-actor" {...register('actor_type')}>
            <option value="">Any</option>
            {ACTOR_TYPES.map((type) => (
              <option key={type} value={type}>
                {ACTOR_LABELS[type]}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="audit-target">Target</label>
          <input id="audit-target" autoComplete="off" spellcheck={false} placeholder="email, key id, subdomain, product" {...register('target_id')} />
        </div>
        <div class="field">
          <label for="audit-since">From</label>
          <input id="audit-since" type="date" {...register('since')} />
        </div>
        <div class="field">
          <label for="audit-until">To (included)</label>
          <input id="audit-until" type="date" {...register('until')} />
        </div>
        <div class="actions">
          <button type="submit" class="button button-primary">
            Apply filters
          </button>
          <button
            type="button"
            class="button"
            onClick={() => {
              reset(NO_FILTERS);
              url.update({ workspace: undefined, action: undefined, actor_type: undefined, target_id: undefined, since: undefined, until: undefined, page: undefined });
            }}
          >
            Clear
          </button>
        </div>
      </form>
      {events.isError && <ErrorNotice error={events.error} title="Could not load the audit log" onRetry={() => void events.refetch()} />}
      {events.data && (
        <>
          <p class="hint" role="status">
            Audit events, {orderText}.
          </p>
          <div class="audit">
            <Table caption={`Audit events, ${orderText}`} columns={columns} busy={events.isFetching}>
              {events.data.audit_events.map((event) => (
                <AuditEventRow key={event.id} event={event} showTarget {...(everyWorkspace ? { workspace: workspaceOf(event) } : {})} />
              ))}
            </Table>
          </div>
          {events.data.audit_events.length === 0 && <p role="status">No audit events match these filters.</p>}
          {/* Read by page number, the listing always has its pagination (only a cursor read has none). */}
          {events.data.pagination && <Pager pagination={events.data.pagination} noun="events" url={url} />}
        </>
      )}
    </Page>
  );
}
