import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter-preact';
import { webhooksApi, type WebhookEndpoint, type WebhookEndpointWithSecret } from '../api/webhooks.ts';
import { Chips } from '../components/chips.tsx';
import { ConfirmDialog, useConfirmation } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { SecretOnce } from '../components/secret-once.tsx';
import { Table } from '../components/table.tsx';
import { dateTime } from '../format.ts';
import { WebhookEndpointForm } from './webhook-endpoint-form.tsx';
import { settingsHref, whereKey, type Where } from '../api/where.ts';

/** Cache key of a workspace's endpoints; one endpoint's is under it, so a change here refreshes both. */
export const endpointsKey = (where: Where) => ['webhook-endpoints', whereKey(where)];

/** The address of an endpoint's deliveries page (under the operator's or the owner's settings page). */
export function deliveriesHref(where: Where, id: string): string {
  return `${settingsHref(where)}/webhooks/${encodeURIComponent(id)}`;
}

/** Enabled, or disabled with the service's reason (`failing`: a delivery ran out of retries). */
export function EndpointStatus({ endpoint }: { endpoint: WebhookEndpoint }) {
  if (endpoint.enabled) return <span class="status status-active">Enabled</span>;
  return <span class="status status-deactivated">Disabled{endpoint.disabled_reason ? ` (${endpoint.disabled_reason})` : ''}</span>;
}

/**
 * A workspace's webhook endpoints (for the operator or its owner, see where.ts): list them (URL, event types, status, created),
 * add one (its signing secret shown once, with a copy button), edit its URL, event types and
 * whether it is enabled, rotate its secret and delete it after a confirmation, and open its
 * deliveries. Source: docs/contract.md Part B, Events and webhooks; docs/console.md, "Using it".
 */
export function WebhookEndpointsSection({ where }: { where: Where }) {
  const { subdomain } = where;
  const queryClient = useQueryClient();
  const key = endpointsKey(where);
  const endpoints = useQuery({ queryKey: key, queryFn: ({ signal }) => webhooksApi.list(where, signal) });
  const [adding, setAdding] = useState(false);
  const [editing, setEditing] = useState<WebhookEndpoint | undefined>();
  const [secret, setSecret] = useState<{ label: string; endpoint: WebhookEndpointWithSecret } | undefined>();
  const refresh = () => void queryClient.invalidateQueries({ queryKey: key });
  const rotate = useMutation({
    mutationFn: (id: string) => webhooksApi.rotateSecret(where, id),
    onSuccess: (endpoint) => setSecret({ label: `New signing secret of ${endpoint.url}`, endpoint }),
    onSettled: refresh,
  });
  const remove = useMutation({ mutationFn: (endpoint: WebhookEndpoint) => webhooksApi.remove(where, endpoint.id), onSettled: refresh });
  const busy = rotate.isPending || remove.isPending;
  const confirmRotate = useConfirmation((endpoint: WebhookEndpoint) => rotate.mutate(endpoint.id));
  const confirmDelete = useConfirmation((endpoint: WebhookEndpoint) => remove.mutate(endpoint));
  return (
    <section aria-labelledby="webhooks-title">
      <div class="page-head">
        <h2 id="webhooks-title">Webhook endpoints</h2>
        <div class="page-actions">
          <button type="button" class="button button-primary" onClick={() => setAdding(true)} disabled={adding}>
            Add a webhook endpoint
          </button>
        </div>
      </div>
      {secret && (
        <SecretOnce label={secret.label} secret={secret.endpoint.secret} what="secret" onDone={() => setSecret(undefined)} />
      )}
      {adding && (
        <WebhookEndpointForm
          save={(body) =>
            webhooksApi.create(where, body).then((created) => setSecret({ label: `Signing secret of ${created.url}`, endpoint: created }))
          }
          onSaved={() => {
            setAdding(false);
            refresh();
          }}
          onCancel={() => setAdding(false)}
        />
      )}
      {editing && (
        <WebhookEndpointForm
          key={editing.id}
          endpoint={editing}
          save={(body) => webhooksApi.update(where, editing.id, body)}
          onSaved={() => {
            setEditing(undefined);
            refresh();
          }}
          onCancel={() => setEditing(undefined)}
        />
      )}
      {rotate.isPending && (
        <p class="notice" role="status">
          Rotating the secret…
        </p>
      )}
      {remove.isPending && (
        <p class="notice" role="status">
          Deleting the endpoint…
        </p>
      )}
      {remove.isSuccess && (
        <p class="notice notice-success" role="status">
          Deleted the endpoint {remove.variables.url}.
        </p>
      )}
      {rotate.isError && <ErrorNotice error={rotate.error} title="Could not rotate the secret" />}
      {remove.isError && <ErrorNotice error={remove.error} title="Could not delete the endpoint" />}
      {endpoints.isError && <ErrorNotice error={endpoints.error} title="Could not load the webhook endpoints" onRetry={() => void endpoints.refetch()} />}
      {endpoints.data?.length === 0 && (
        <div class="empty">
          <p>No webhook endpoints yet: add one to have the workspace’s user changes POSTed to it.</p>
        </div>
      )}
      {endpoints.data && endpoints.data.length > 0 && (
        <Table caption={`Webhook endpoints of ${subdomain}, oldest first`} columns={['URL', 'Event types', 'Status', 'Created', 'Actions']}>
          {endpoints.data.map((endpoint) => (
            <tr key={endpoint.id}>
              <th scope="row">
                <code class="url">{endpoint.url}</code>
                {endpoint.description && <div class="muted">{endpoint.description}</div>}
              </th>
              <td>{endpoint.event_types ? <Chips items={endpoint.event_types} /> : 'All types'}</td>
              <td>
                <EndpointStatus endpoint={endpoint} />
              </td>
              <td>{dateTime(endpoint.created_at)}</td>
              <td class="row-actions">
                <Link href={deliveriesHref(where, endpoint.id)} class="button" aria-label={`Deliveries of ${endpoint.url}`}>
                  Deliveries
                </Link>
                <button type="button" class="button" aria-label={`Edit ${endpoint.url}`} onClick={() => setEditing(endpoint)}>
                  Edit
                </button>
                <button
                  type="button"
                  class="button"
                  disabled={busy}
                  aria-label={`Rotate the secret of ${endpoint.url}`}
                  onClick={() => confirmRotate.ask(endpoint)}
                >
                  Rotate secret
                </button>
                <button
                  type="button"
                  class="button button-danger"
                  disabled={busy}
                  aria-label={`Delete ${endpoint.url}`}
                  onClick={() => confirmDelete.ask(endpoint)}
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </Table>
      )}
      <ConfirmDialog
        {...confirmRotate.dialog}
        title="Rotate this endpoint’s signing secret?"
        confirmLabel="Rotate the secret"
      >
        <p>
          <code>{confirmRotate.subject?.url}</code> gets a new secret, shown once. For 24 hours deliveries carry a second signature by the
          old secret, so the receiver can switch over without rejecting one.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        {...confirmDelete.dialog}
        title="Delete this webhook endpoint?"
        confirmLabel="Delete the endpoint"
        danger
      >
        <p>
          Nothing more is sent to <code>{confirmDelete.subject?.url}</code>, and its delivery history is deleted with it. It cannot be
          undone.
        </p>
      </ConfirmDialog>
    </section>
  );
}
