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
import { useScopes } from '../api/session.ts';
import { RequiresScope } from '../components/scope-notice.tsx';
import { whereKey, type Where } from '../api/where.ts';

/** Revoked, expired or active. */
function keyStatus(apiKey: ApiKey): string {
  if (apiKey.revoked_at) return `Revoked ${dateTime(apiKey.revoked_at)}`;
  if (apiKey.expires_at && Date.parse(apiKey.expires_at) <= Date.now()) return 'Expired';
  return 'Active';
}

/** A workspace's API keys: list, create (the plaintext shown once), revoke after a confirmation. */
function ApiKeysSection({ where }: { where: Where }) {
  const queryClient = useQueryClient();
  const key = ['api-keys', whereKey(where)];
  const keys = useQuery({ queryKey: key, queryFn: ({ signal }) => adminApi.listApiKeys(where, signal) });
  const scopes = useScopes(where.as === 'operator');
  const [created, setCreated] = useState<CreatedApiKey | undefined>();
  const [revoking, setRevoking] = useState<string | undefined>();
  const [creating, setCreating] = useState(false);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: key });
  const revoke = useMutation({ mutationFn: (id: string) => adminApi.revokeApiKey(where, id), onSettled: refresh });
  return (
    <section aria-labelledby="keys-title">
      <div class="page-head">
        <h2 id="keys-title">API keys</h2>
        <button type="button" class="button button-primary" disabled={creating} onClick={() => setCreating(true)}>
          Create an API key
        </button>
      </div>
      {created && <SecretOnce label={`New API key of ${where.subdomain}`} secret={created.key} onDone={() => setCreated(undefined)} />}
      {creating && (
        <ApiKeyForm
          create={(body) => adminApi.createApiKey(where, body)}
          lacking={scopes.lacking}
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
        <Table caption={<>API keys of {where.subdomain}, oldest first</>} columns={['Name', 'Prefix', 'Scopes', 'Expires', 'Created', 'Last used', 'Status', 'Actions']}>
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
      )}
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
    </section>
  );
}

/**
 * One workspace's settings, for the operator (any workspace, through the operator API) or its
 * owner (their own, through the workspace API; docs/console.md, "Owners' self-service"): its
 * API keys (create with a name, scopes and an expiry, the plaintext shown once; revoke after a
 * confirmation), its identity provider ({@link IdentityProviderSection}) and its webhook
 * endpoints ({@link WebhookEndpointsSection}). An owner's session sees each section only with
 * its scope (`keys:write`, `sso:write`, `webhooks:write`), else the reason. Source:
 * docs/contract.md Part B, Authentication, Operator interface, and Events and webhooks.
 */
export function WorkspacePage({ where }: { where: Where }) {
  const { subdomain } = where;
  const operator = where.as === 'operator';
  return (
    <Page title={operator ? `Workspace ${subdomain}` : `Settings of ${subdomain}`}>
      {operator && (
        <p>
          <Link href="/workspaces">← All workspaces</Link> · <Link href={`/audit?workspace=${encodeURIComponent(subdomain)}`}>Audit log of {subdomain}</Link> ·{' '}
          <Link href={`/workspaces/${encodeURIComponent(subdomain)}/policies`}>Policies of {subdomain}</Link>
        </p>
      )}
      <RequiresScope scope="keys:write" what="API keys" operator={operator}>
        <ApiKeysSection where={where} />
      </RequiresScope>
      <RequiresScope scope="sso:write" what="The identity provider" operator={operator}>
        <IdentityProviderSection where={where} />
      </RequiresScope>
      <RequiresScope scope="webhooks:write" what="Webhook endpoints" operator={operator}>
        <WebhookEndpointsSection where={where} />
      </RequiresScope>
    </Page>
  );
}
