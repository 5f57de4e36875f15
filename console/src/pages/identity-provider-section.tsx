import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { adminApi, type IdentityProviderConfig } from '../api/admin.ts';
import { ConfirmDialog } from '../components/confirm-dialog.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { dateTime } from '../format.ts';
import { whereKey, type Where } from '../api/where.ts';

/** Where the provider sends people back (the API gives it as `redirect_path` once one is set). */
const CALLBACK_PATH = '/console/oidc/callback';

/** The workspace's console origin: this page's own for its owner, the workspace's host for the operator. */
function workspaceOrigin(where: Where): string {
  return where.as === 'owner' ? location.origin : `${location.protocol}//${where.subdomain}.${location.host}`;
}

/**
 * A workspace's identity provider (for the operator or its owner, see where.ts): the issuer
 * and client id (never the secret), the redirect URI to register at the provider, a form to
 * set or replace it (the server discovers the provider before saving: a test), a link that
 * tries the sign-in with it, and removal after a confirmation. See docs/console.md, "Signing in".
 */
export function IdentityProviderSection({ where }: { where: Where }) {
  const queryClient = useQueryClient();
  const key = ['identity-provider', whereKey(where)];
  const provider = useQuery({ queryKey: key, queryFn: ({ signal }) => adminApi.getIdentityProvider(where, signal) });
  const [editing, setEditing] = useState(false);
  const [removing, setRemoving] = useState(false);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: key });
  const { register, handleSubmit, formState, reset } = useForm<IdentityProviderConfig>();
  const save = useMutation({
    mutationFn: (body: IdentityProviderConfig) => adminApi.setIdentityProvider(where, body),
    onSuccess: () => {
      setEditing(false);
      reset();
      refresh();
    },
  });
  const remove = useMutation({ mutationFn: () => adminApi.removeIdentityProvider(where), onSettled: refresh });
  const field = (name: keyof IdentityProviderConfig, label: string, type = 'text') => {
    const id = `idp-${name}`;
    const error = formState.errors[name];
    return (
      <div class="field">
        <label for={id}>{label}</label>
        <input id={id} type={type} autoComplete="off" spellcheck={false} aria-invalid={error ? 'true' : undefined} {...register(name, { required: `Enter the ${label.toLowerCase()}.` })} />
        {error && <p class="field-error">{error.message}</p>}
      </div>
    );
  };
  return (
    <section aria-labelledby="idp-title">
      <h2 id="idp-title">Identity provider</h2>
      {provider.isError && <ErrorNotice error={provider.error} title="Could not load the identity provider" onRetry={() => void provider.refetch()} />}
      {provider.data === null && (
        <p>
          None: the workspace's console takes its API key at sign-in. Register this redirect URI at the provider first:{' '}
          <code>{`${workspaceOrigin(where)}${CALLBACK_PATH}`}</code>
        </p>
      )}
      {provider.data && (
        <p>
          Owners sign in with <code>{provider.data.issuer}</code> (client <code>{provider.data.client_id}</code>; the secret is never shown), set{' '}
          {dateTime(provider.data.updated_at)}. Redirect URI to register: <code>{`${workspaceOrigin(where)}${provider.data.redirect_path}`}</code>{' '}
          <a href={`${workspaceOrigin(where)}/console/oidc/start`} target="_blank" rel="noopener noreferrer">
            Test the sign-in (new tab)
          </a>
        </p>
      )}
      {!editing && provider.data !== undefined && (
        <p>
          <button type="button" class="button" onClick={() => setEditing(true)}>
            {provider.data ? 'Replace the identity provider' : 'Set an identity provider'}
          </button>{' '}
          {provider.data && (
            <button type="button" class="button button-danger" onClick={() => setRemoving(true)}>
              Remove it
            </button>
          )}
        </p>
      )}
      {editing && (
        <form class="card" onSubmit={handleSubmit((values) => save.mutate(values))} aria-label="Identity provider">
          {field('issuer', 'Issuer URL')}
          {field('client_id', 'Client ID')}
          {field('client_secret', 'Client secret', 'password')}
          {save.isError && <ErrorNotice error={save.error} title="Could not set the identity provider" />}
          <button type="submit" class="button button-primary" disabled={save.isPending}>
            Save
          </button>{' '}
          <button type="button" class="button" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </form>
      )}
      {remove.isError && <ErrorNotice error={remove.error} title="Could not remove the identity provider" />}
      <ConfirmDialog
        open={removing}
        title="Remove the identity provider?"
        confirmLabel="Remove it"
        danger
        onCancel={() => setRemoving(false)}
        onConfirm={() => {
          remove.mutate();
          setRemoving(false);
        }}
      >
        <p>The owners signed in with it are signed out at once; the console takes the workspace's API key again.</p>
      </ConfirmDialog>
    </section>
  );
}
