import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'wouter-preact';
import { webhooksApi, type WebhookDelivery } from '../api/webhooks.ts';
import { ConfirmDialog, useConfirmation } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Page } from '../components/page.tsx';
import { Pager, PAGE_SIZES } from '../components/pager.tsx';
import { Table } from '../components/table.tsx';
import { dateTime } from '../format.ts';
import { positiveParam, useUrlParams } from '../url-state.ts';
import { EndpointStatus, endpointsKey } from './webhook-endpoints.tsx';
import { settingsHref, whereKey, type Where } from '../api/where.ts';

/** While a delivery is pending the page asks again this often, in ms, so its outcome shows. */
const PENDING_REFRESH_MS = 2000;

const STATUS_LABELS: Record<WebhookDelivery['status'], string> = { pending: 'Pending', succeeded: 'Succeeded', failed: 'Failed' };

/** Every attempt of a delivery: when, the receiver's status (or why none came) and how long it took. */
function Attempts({ delivery }: { delivery: WebhookDelivery }) {
  if (delivery.attempt_log.length === 0) return <>None yet</>;
  return (
    <ol class="attempts">
      {delivery.attempt_log.map((attempt) => (
        <li key={attempt.attempted_at}>
          {dateTime(attempt.attempted_at)}: {attempt.response_status ?? attempt.error ?? 'no answer'} ({attempt.duration_ms} ms)
        </li>
      ))}
    </ol>
  );
}

/**
 * One webhook endpoint's deliveries (for the operator or the workspace's owner), newest first with the page in the URL: each
 * event's type and id, status, attempts (time, response status or error, duration), the last
 * response code, and redelivery after a confirmation. Pending deliveries are refreshed until
 * they settle. Source: docs/contract.md Part B, Events and webhooks.
 */
export function WebhookDeliveriesPage({ where, id }: { where: Where; id: string }) {
  const { subdomain } = where;
  const url = useUrlParams();
  const queryClient = useQueryClient();
  const page = positiveParam(url.params, 'page', 1);
  const size = positiveParam(url.params, 'size', 30);
  const query = { page_number: page, page_size: (PAGE_SIZES as readonly number[]).includes(size) ? size : 30 };
  const endpoint = useQuery({ queryKey: [...endpointsKey(where), id], queryFn: ({ signal }) => webhooksApi.get(where, id, signal) });
  const deliveriesKey = ['webhook-deliveries', whereKey(where), id];
  const deliveries = useQuery({
    queryKey: [...deliveriesKey, query],
    queryFn: ({ signal }) => webhooksApi.listDeliveries(where, id, query, signal),
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (q.state.data?.deliveries.some((d) => d.status === 'pending') ? PENDING_REFRESH_MS : false),
  });
  const redeliver = useMutation({
    mutationFn: (delivery: WebhookDelivery) => webhooksApi.redeliver(where, id, delivery.id),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: deliveriesKey }),
  });
  const confirmRedeliver = useConfirmation((delivery: WebhookDelivery) => redeliver.mutate(delivery));
  const title = endpoint.data ? `Deliveries to ${endpoint.data.url}` : 'Webhook deliveries';
  return (
    <Page
      title={title}
      actions={
        <button type="button" class="button" disabled={deliveries.isFetching} onClick={() => void deliveries.refetch()}>
          {deliveries.isFetching ? 'Refreshing…' : 'Refresh'}
        </button>
      }
    >
      <p>
        <Link href={settingsHref(where)}>{where.as === 'owner' ? '← Settings' : `← Workspace ${subdomain}`}</Link>
      </p>
      {endpoint.isError && <ErrorNotice error={endpoint.error} title="Could not load the endpoint" onRetry={() => void endpoint.refetch()} />}
      {endpoint.data && (
        <dl class="details">
          <dt>Status</dt>
          <dd>
            <EndpointStatus endpoint={endpoint.data} />
          </dd>
          <dt>Event types</dt>
          <dd>{endpoint.data.event_types?.join(', ') ?? 'All types'}</dd>
          <dt>Id</dt>
          <dd>
            <code>{endpoint.data.id}</code>
          </dd>
        </dl>
      )}
      {redeliver.isPending && (
        <p class="notice" role="status">
          Asking for a redelivery…
        </p>
      )}
      {redeliver.isSuccess && (
        <p class="notice notice-success" role="status">
          Event {redeliver.variables.event_id} will be sent again now.
        </p>
      )}
      {redeliver.isError && <ErrorNotice error={redeliver.error} title="Could not redeliver" />}
      {deliveries.isError && <ErrorNotice error={deliveries.error} title="Could not load the deliveries" onRetry={() => void deliveries.refetch()} />}
      {deliveries.data && (
        <section aria-labelledby="deliveries-title">
          <h2 id="deliveries-title">Deliveries</h2>
          {deliveries.data.deliveries.length === 0 ? (
            <div class="empty">
              <p>Nothing sent to this endpoint yet: a delivery appears when a user of {subdomain} changes.</p>
            </div>
          ) : (
            <Table
              caption="Deliveries, newest first"
              columns={['Event', 'Status', 'Response', 'Attempts', 'Created', 'Actions']}
              busy={deliveries.isFetching && deliveries.isPlaceholderData}
            >
              {deliveries.data.deliveries.map((delivery) => (
                <tr key={delivery.id}>
                  <th scope="row">
                    {delivery.event_type}
                    <div>
                      <code class="request-id">{delivery.event_id}</code>
                    </div>
                  </th>
                  <td>
                    <span class={`status status-${delivery.status}`}>{STATUS_LABELS[delivery.status]}</span>
                    {delivery.next_attempt_at && <div class="muted">Next attempt {dateTime(delivery.next_attempt_at)}</div>}
                  </td>
                  <td>{delivery.last_response_status ?? '—'}</td>
                  <td>
                    <Attempts delivery={delivery} />
                  </td>
                  <td>{dateTime(delivery.created_at)}</td>
                  <td>
                    <button
                      type="button"
                      class="button"
                      disabled={redeliver.isPending}
                      aria-label={`Redeliver ${delivery.event_type} ${delivery.event_id}`}
                      onClick={() => confirmRedeliver.ask(delivery)}
                    >
                      Redeliver
                    </button>
                  </td>
                </tr>
              ))}
            </Table>
          )}
          <Pager pagination={deliveries.data.pagination} noun="deliveries" one="delivery" url={url} />
        </section>
      )}
      <ConfirmDialog
        {...confirmRedeliver.dialog}
        title="Send this delivery again?"
        confirmLabel="Redeliver"
      >
        <p>
          The event {confirmRedeliver.subject?.event_type} (<code>{confirmRedeliver.subject?.event_id}</code>) is sent again now, with a fresh retry schedule and
          the same <code>webhook-id</code>, so a receiver that already has it can tell.
        </p>
      </ConfirmDialog>
    </Page>
  );
}
