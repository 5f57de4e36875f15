import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter-preact';
import { adminApi, type ApiKey, type CreatedApiKey } from '../api/admin.ts';
import { EVERY_SCOPE } from '../../../sdk/api-key-scopes.ts';
import { ApiKeyForm } from './api-key-form.tsx';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Page } from '../components/page.tsx';
import { SecretOnce } from '../components/secret-once.tsx';
import { dateTime } from '../format.ts';
import { WebhookEndpointsSection } from './webhook-endpoints.tsx';
import { IdentityProviderSection } from './identity-provider-section.tsx';
import { Table } from '../components/table.tsx';

/** Revoked, expired or active. */
function keyStatus(apiKey: ApiKey): string {
  if (apiKey.revoked_at) return `Revoked ${dateTime(apiKey.revoked_at)}`;
  if (apiKey.expires_at && Date.parse(apiKey.expires_at) <= Date.now()) return 'Expired';
  return 'Active';
}

/**
 * One workspace's API keys (operator): create one with a name, scopes and an expiry (the
 * plaintext shown once, with a copy button), revoke after a confirmation, who made each and
 * when each was last used (to the minute); then its webhook
 * endpoints ({@link WebhookEndpointsSection}). Source: docs/contract.md Part B, Authentication,
 * Operator interface, and Events and webhooks.
 */
export function WorkspacePage({ subdomain }: { subdomain: string }) {
  const queryClient = useQueryClient();
  const key = ['api-keys', subdomain];
  const keys = useQuery({ queryKey: key, queryFn: ({ signal }) => adminApi.listApiKeys(subdomain, signal) });
  const [created, setCreated] = useState<CreatedApiKey | undefined>();
  const [revoking, setRevoking] = useState<string | undefined>();
  const [creating, setCreating] = useState(false);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: key });
  const revoke = useMutation({ mutationFn: (id: string) => adminApi.revokeApiKey(subdomain, id), onSettled: refresh });
  return (
    <Page
      title={`Workspace ${subdomain}`}
      actions={
        <button type="button" class="button button-primary" disabled={creating} onClick={() => setCreating(true)}>
          Create an API key
        </button>
      }
    >
      <p>
        <Link href="/workspaces">← All workspaces</Link> · <Link href={`/audit?workspace=${encodeURIComponent(subdomain)}`}>Audit log of {subdomain}</Link>
      </p>
      {created && <SecretOnce label={`New API key of ${subdomain}`} secret={created.key} onDone={() => setCreated(undefined)} />}
      {creating && (
        <ApiKeyForm
          create={(body) => adminApi.createApiKey(subdomain, body)}
          onCreated={(apiKey) => {
            setCreating(false);
            setCreated(apiKey);
            refresh();
          }}
          onCancel={() => setCreating(false)}
        />
      )}
      {revoke.isError && <ErrorNotice error={revoke.error} title="Could not revoke the key" />}
      {keys.isError && <ErrorNotice error={keys.error} title="Could not load the keys" onRetry={() => void keys.refetch()} />}
      {keys.data && (
        <section aria-labelledby="keys-title">
          <h2 id="keys-title">API keys</h2>
          <Table caption={<>API keys of {subdomain}, oldest first</>} columns={['Name', 'Prefix', 'Scopes', 'Expires', 'Created', 'Last used', 'Status', 'Actions']}>
            {keys.data.map((apiKey) => (
              <tr key={apiKey.id}>
                <th scope="row">{apiKey.name || '(unnamed)'}</th>
                <td>
                  <code title={apiKey.id}>{apiKey.prefix}…</code>
                </td>
                <td>{apiKey.scopes.includes(EVERY_SCOPE) ? 'every scope (*)' : apiKey.scopes.join(', ')}</td>
                <td>{apiKey.expires_at ? dateTime(apiKey.expires_at) : 'Never'}</td>
                <td>
                  {dateTime(apiKey.created_at)}
                  {apiKey.created_by && <> by {apiKey.created_by.label ?? apiKey.created_by.type}</>}
                </td>
                <td>{apiKey.last_used_at ? dateTime(apiKey.last_used_at) : 'Never'}</td>
                <td>{keyStatus(apiKey)}</td>
                <td>
                  {!apiKey.revoked_at && (
                    <button type="button" class="button button-danger" aria-label={`Revoke key ${apiKey.name || apiKey.prefix}`} onClick={() => setRevoking(apiKey.id)}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </Table>
        </section>
      )}
      <IdentityProviderSection subdomain={subdomain} />
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
