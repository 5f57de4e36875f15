import { useMutation, useQuery } from '@tanstack/react-query';
import type { ComponentChildren } from 'preact';
import { useForm } from 'react-hook-form';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Page } from '../components/page.tsx';
import { api, send } from '../api/client.ts';
import { openKeySession, operatorSignInOptions, signInOptions } from '../api/console-client.ts';
import { isOperator, setCredentials, useCredentials, workspaceOfHost } from '../session.ts';

/** The two forms: a workspace's API key (exchanged for a session) and the operator token. */
type Kind = 'workspace' | 'adminToken';

interface SignInForm {
  secret: string;
}

/**
 * One sign-in form. A workspace key is exchanged at once for a session (the server answers
 * with an HttpOnly cookie; the key is not kept anywhere in the page); the operator token is
 * tried on the workspace list and kept in this tab only when the API accepts it.
 */
function SignInWith({ kind, workspace, children }: { kind: Kind; workspace?: string; children?: ComponentChildren }) {
  const { register, handleSubmit, formState } = useForm<SignInForm>();
  const attempt = useMutation({
    mutationFn: async ({ secret }: SignInForm) => {
      const value = secret.trim();
      if (kind === 'workspace') {
        await openKeySession(value);
        setCredentials({ workspace: workspace! });
        return;
      }
      const WORKSPACES = '/admin/v1/workspaces';
      const query = { page_size: 1 };
      await send(`GET ${WORKSPACES}`, (signal) => api.GET(WORKSPACES, { params: { query }, headers: { authorization: `Bearer ${value}` }, signal }));
      // Kept only once the API accepted it.
      setCredentials({ adminToken: value });
    },
  });
  const id = `sign-in-${kind}`;
  const error = formState.errors.secret;
  return (
    <form class="card" onSubmit={handleSubmit((values) => attempt.mutate(values))} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{kind === 'workspace' ? `Workspace “${workspace}”` : 'Operator'}</h2>
      {children}
      <p>
        {kind === 'workspace'
          ? 'Sign in with one of the workspace’s API keys to see and change its users.'
          : children
            ? 'Or sign in with the server’s operator token (ADMIN_TOKEN).'
            : 'Sign in with the server’s operator token (ADMIN_TOKEN) to manage workspaces, keys, products and the audit log.'}
      </p>
      <div class="field">
        <label for={id}>{kind === 'workspace' ? 'API key' : 'Operator token'}</label>
        <input
          id={id}
          type="password"
          autoComplete="off"
          spellcheck={false}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? `${id}-error` : undefined}
          {...register('secret', { required: kind === 'workspace' ? 'Enter an API key.' : 'Enter the operator token.' })}
        />
        {error && (
          <p id={`${id}-error`} class="field-error">
            {error.message}
          </p>
        )}
      </div>
      {attempt.isError && <ErrorNotice error={attempt.error} title="Could not sign in" />}
      <button type="submit" class="button button-primary" disabled={attempt.isPending}>
        {attempt.isPending ? 'Signing in…' : kind === 'workspace' ? `Sign in to ${workspace}` : 'Sign in as operator'}
      </button>
    </form>
  );
}

/** "Sign in with <identity provider>": a plain link, the server runs the whole flow. */
function ProviderLink({ text, href, host }: { text: string; href: string; host: string }) {
  return (
    <>
      <p>{text}</p>
      <p>
        <a class="button button-primary" href={href}>
          Sign in with {host}
        </a>
      </p>
    </>
  );
}

/**
 * The sign-in page: with a workspace API key on a workspace's own host
 * (`acme.localhost:3000/console/`), exchanged for a session cookie; as operator on the
 * operator host only (the operator API answers nowhere else), in one card: the operator
 * identity provider when the server has one (a session cookie too) and the operator token,
 * kept in this tab's sessionStorage (see session.ts).
 * @param need - what the page the person asked for needs; only that form is offered then.
 */
export function SignInPage({ need }: { need?: 'workspace' | 'operator' }) {
  const workspace = workspaceOfHost();
  const credentials = useCredentials();
  const wantWorkspace = workspace !== undefined && need !== 'operator' && !credentials.workspace;
  const options = useQuery({ queryKey: ['sign-in-options', workspace], queryFn: signInOptions, enabled: wantWorkspace });
  const provider = wantWorkspace ? options.data?.identity_provider : null;
  // Offered until the options say otherwise, so the form is there at once (keyboard users tab to it).
  const offerKey = wantWorkspace && (options.data?.key_sign_in ?? true);
  // The operator API answers on the operator host only: no operator card on a workspace's host.
  const offerOperator = workspace === undefined && need !== 'workspace' && !isOperator(credentials);
  const operatorOptions = useQuery({ queryKey: ['operator-sign-in-options'], queryFn: operatorSignInOptions, enabled: offerOperator });
  const operatorProvider = offerOperator ? operatorOptions.data : null;
  return (
    <Page title="Sign in">
      <div class="sign-in">
        {provider && (
          <section class="card" aria-labelledby="sign-in-idp-title">
            <h2 id="sign-in-idp-title">{`Workspace “${workspace}”`}</h2>
            <ProviderLink text="Owners of the workspace sign in with their company account." href="/console/oidc/start" host={provider.host} />
          </section>
        )}
        {offerKey && <SignInWith kind="workspace" workspace={workspace} />}
        {offerOperator && (
          <SignInWith kind="adminToken">
            {operatorProvider && (
              <ProviderLink
                text="Operators sign in with their company account to manage workspaces, keys, products and the audit log."
                href="/console/operator/oidc/start"
                host={operatorProvider.host}
              />
            )}
          </SignInWith>
        )}
        {need === 'workspace' && workspace === undefined && (
          <p class="notice">
            A workspace’s users are reached on the workspace’s own address, for example{' '}
            <code>http://demo.localhost:3000/console/</code>.
          </p>
        )}
        {need === 'operator' && workspace !== undefined && (
          <p class="notice">
            The operator’s pages are on the server’s own address (not a workspace’s), for example{' '}
            <code>http://localhost:3000/console/</code>.
          </p>
        )}
      </div>
    </Page>
  );
}
