import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter-preact';
import { adminApi, type CreatedApiKey } from '../api/admin.ts';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Page } from '../components/page.tsx';
import { SecretOnce } from '../components/secret-once.tsx';
import { dateTime } from '../format.ts';
import { WebhookEndpointsSection } from './webhook-endpoints.tsx';
import { Table } from '../components/table.tsx';

/**
 * One workspace's API keys (operator): create (the plaintext shown once, with a copy button),
 * revoke after a confirmation, and when each was last used (to the minute); then its webhook
 * endpoints ({@link WebhookEndpointsSection}). Source: docs/contract.md Part B, Authentication,
 * Operator interface, and Events and webhooks.
 */
export function WorkspacePage({ subdomain }: { subdomain: string }) {
  const queryClient = useQueryClient();
  const key = ['api-keys', subdomain];
  const keys = useQuery({ queryKey: key, queryFn: ({ signal }) => adminApi.listApiKeys(subdomain, signal) });
  const [created, setCreated] = useState<CreatedApiKey | undefined>();
  const [revoking, setRevoking] = useState<string | undefined>();
  const refresh = () => void queryClient.invalidateQueries({ queryKey: key });
  const create = useMutation({ mutationFn: () => adminApi.createApiKey(subdomain), onSuccess: setCreated, onSettled: refresh });
  const revoke = useMutation({ mutationFn: (id: string) => adminApi.revokeApiKey(subdomain, id), onSettled: refresh });
  return (
    <Page
      title={`Workspace ${subdomain}`}
      actions={
        <button type="button" class="button button-primary" disabled={create.isPending} onClick={() => create.mutate()}>
          Create an API key
        </button>
      }
    >
      <p>
        <Link href="/workspaces">← All workspaces</Link> · <Link href={`/audit?workspace=${encodeURIComponent(subdomain)}`}>Audit log of {subdomain}</Link>
      </p>
      {created && <SecretOnce label={`New API key of ${subdomain}`} secret={created.key} onDone={() => setCreated(undefined)} />}
      {create.isError && <ErrorNotice error={create.error} title="Could not create a key" />}
      {revoke.isError && <ErrorNotice error={revoke.error} title="Could not revoke the key" />}
      {keys.isError && <ErrorNotice error={keys.error} title="Could not load the keys" onRetry={() => void keys.refetch()} />}
      {keys.data && (
        <section aria-labelledby="keys-title">
          <h2 id="keys-title">API keys</h2>
          <Table caption={<>API keys of {subdomain}, oldest first</>} columns={['Prefix', 'Id', 'Created', 'Last used', 'Status', 'Actions']}>
            {keys.data.map((apiKey) => (
              <tr key={apiKey.id}>
                <th scope="row">
                  <code>{apiKey.prefix}…</code>
                </th>
                <td>
                  <code>{apiKey.id}</code>
                </td>
                <td>{dateTime(apiKey.created_at)}</td>
                <td>{apiKey.last_used_at ? dateTime(apiKey.last_used_at) : 'Never'}</td>
                <td>{apiKey.revoked_at ? `Revoked ${dateTime(apiKey.revoked_at)}` : 'Active'}</td>
                <td>
                  {!apiKey.revoked_at && (
                    <button type="button" class="button button-danger" aria-label={`Revoke key ${apiKey.prefix}`} onClick={() => setRevoking(apiKey.id)}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </Table>
        </section>
      )}
      <WebhookEndpointsSection subdomain={subdomain} />
      <ConfirmDialog
        open={revoking !== undefined}
        title="Revoke this API key?"
        confirmLabel="Revoke the key"
        danger
        onCancel={() => setRevoking(undefined)}
        onConfirm={() => {
          revoke.mutate(revoking!);
          setRevoking(undefined);
        }}
      >
        <p>Requests carrying it are refused at once (401). Programs using it stop working until they get another key.</p>
      </ConfirmDialog>
    </Page>
  );
}
