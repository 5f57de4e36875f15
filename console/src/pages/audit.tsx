import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { adminApi, type AuditQuery } from '../api/admin.ts';
import { AuditEventRow } from '../components/audit-changes.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Page } from '../components/page.tsx';
import { Pager, PAGE_SIZES } from '../components/pager.tsx';
import { choiceParam, positiveParam, useUrlParams } from '../url-state.ts';
import { Table } from '../components/table.tsx';

const ACTOR_TYPES = ['', 'person', 'api_key', 'scim', 'operator', 'system'] as const;
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
  'workspace.created',
  'workspace.deleted',
  'product.created',
  'product.updated',
  'product.deleted',
];

interface Filters {
  workspace: string;
  action: string;
  actor_type: string;
  target_id: string;
}

/**
 * The audit log (operator): every recorded change, oldest first, narrowed by workspace,
 * action, actor type and target, with the filters and the page in the URL. Source: docs/contract.md
 * Part B, Retries, limits and audit.
 */
export function AuditPage() {
  const url = useUrlParams();
  const { params } = url;
  const filters: Filters = {
    workspace: params.get('workspace') ?? '',
    action: params.get('action') ?? '',
    actor_type: choiceParam(params, 'actor_type', ACTOR_TYPES, ''),
    target_id: params.get('target_id') ?? '',
  };
  const size = positiveParam(params, 'size', 30);
  const query: AuditQuery = {
    page_number: positiveParam(params, 'page', 1),
    page_size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 30,
    ...(filters.workspace ? { workspace: filters.workspace } : {}),
    ...(filters.action ? { action: filters.action } : {}),
    ...(filters.actor_type ? { actor_type: filters.actor_type as NonNullable<AuditQuery['actor_type']> } : {}),
    ...(filters.target_id ? { target_id: filters.target_id } : {}),
  };
  const events = useQuery({
    queryKey: ['audit', query],
    queryFn: ({ signal }) => adminApi.listAuditEvents(query, signal),
    placeholderData: keepPreviousData,
  });
  const { register, handleSubmit, reset } = useForm<Filters>({ values: filters });
  const apply = (values: Filters) => url.update({ ...values, page: undefined });
  return (
    <Page title="Audit log">
      <form class="filters" role="search" aria-label="Filter the audit log" onSubmit={handleSubmit(apply)}>
        <div class="field">
          <label for="audit-workspace">Workspace</label>
          <input id="audit-workspace" autoComplete="off" spellcheck={false} {...register('workspace')} />
        </div>
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
            <option value="api_key">API key</option>
            <option value="scim">SCIM</option>
            <option value="admin">Operator</option>
            <option value="system">System</option>
          </select>
        </div>
        <div class="field">
          <label for="audit-target">Target</label>
          <input id="audit-target" autoComplete="off" spellcheck={false} placeholder="email, key id, subdomain, product" {...register('target_id')} />
        </div>
        <div class="actions">
          <button type="submit" class="button button-primary">
            Apply filters
          </button>
          <button
            type="button"
            class="button"
            onClick={() => {
              reset({ workspace: '', action: '', actor_type: '', target_id: '' });
              url.update({ workspace: undefined, action: undefined, actor_type: undefined, target_id: undefined, page: undefined });
            }}
          >
            Clear
          </button>
        </div>
      </form>
      {events.isError && <ErrorNotice error={events.error} title="Could not load the audit log" onRetry={() => void events.refetch()} />}
      {events.data && (
        <>
          <Table caption="Audit events, oldest first" columns={['When', 'Action', 'Actor', 'Target', 'Changes', 'Request id']} busy={events.isFetching}>
            {events.data.audit_events.map((event) => <AuditEventRow key={event.id} event={event} showTarget />)}
          </Table>
          {events.data.pagination.total_records === 0 && <p role="status">No audit events match these filters.</p>}
          <Pager pagination={events.data.pagination} noun="events" url={url} />
        </>
      )}
    </Page>
  );
}
