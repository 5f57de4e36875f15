import { useMutation, useQuery } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Page } from '../components/page.tsx';
import { api, send } from '../api/client.ts';
import { errorFromResponse } from '../../../sdk/errors.ts';
import { OPERATOR_SESSION_PATH, SESSION_PATH, isOperator, setCredentials, useCredentials, workspaceOfHost } from '../session.ts';

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
function SignInWith({ kind, workspace }: { kind: Kind; workspace?: string }) {
  const { register, handleSubmit, formState } = useForm<SignInForm>();
  const attempt = useMutation({
    mutationFn: async ({ secret }: SignInForm) => {
      const value = secret.trim();
      if (kind === 'workspace') {
        const response = await fetch(SESSION_PATH, { method: 'POST', headers: { 'x-api-key': value }, credentials: 'same-origin' });
        if (!response.ok) throw errorFromResponse(`POST ${SESSION_PATH}`, response, await response.json().catch(() => undefined));
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
      <p>
        {kind === 'workspace'
          ? 'Sign in with one of the workspace’s API keys to see and change its users.'
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

/** What a workspace host offers: its identity provider (by host) and whether a key may sign in. */
interface SignInOptions {
  readonly identity_provider: { readonly host: string } | null;
  readonly key_sign_in: boolean;
}

/** The query parameter the server adds when it sends the browser back from the identity provider. */
const RETURNED_PARAM = 'signed_in';

/**
 * A workspace's sign-in options. Back from the identity provider (the server sends the
 * browser to `/console/?signed_in=oidc` with the session cookie set), the session signs the
 * page in without asking anything; only then, so a "Sign out" still under way is never undone.
 */
async function signInOptions(workspace: string): Promise<SignInOptions> {
  const url = new URL(location.href);
  if (url.searchParams.get(RETURNED_PARAM) === 'oidc') {
    url.searchParams.delete(RETURNED_PARAM);
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    const existing = await fetch(SESSION_PATH, { credentials: 'same-origin' });
    if (existing.ok) setCredentials({ workspace });
  }
  const response = await fetch('/console/oidc/options', { credentials: 'same-origin' });
  if (!response.ok) return { identity_provider: null, key_sign_in: true };
  return (await response.json()) as SignInOptions;
}

/**
 * The operator identity provider of this (operator) host, if the server has one. Back from it
 * (`/console/?signed_in=operator`), the operator's session signs the page in, as for a workspace.
 */
async function operatorSignInOptions(): Promise<{ readonly host: string } | null> {
  const url = new URL(location.href);
  if (url.searchParams.get(RETURNED_PARAM) === 'operator') {
    url.searchParams.delete(RETURNED_PARAM);
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    const existing = await fetch(OPERATOR_SESSION_PATH, { credentials: 'same-origin' });
    if (existing.ok) {
      const { actor } = (await existing.json()) as { actor: { label: string | null } };
      setCredentials({ operator: actor.label ?? 'operator' });
    }
  }
  // 404 when the server has no operator identity provider: only the token form then.
  const response = await fetch('/console/operator/options', { credentials: 'same-origin' });
  if (!response.ok) return null;
  return ((await response.json()) as { identity_provider: { host: string } }).identity_provider;
}

/** "Sign in with <identity provider>": a plain link, the server runs the whole flow. */
function SignInWithProvider({ id, title, text, href, host }: { id: string; title: string; text: string; href: string; host: string }) {
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <p>{text}</p>
      <a class="button button-primary" href={href}>
        Sign in with {host}
      </a>
    </section>
  );
}

/**
 * The sign-in page: with a workspace API key on a workspace's own host
 * (`acme.localhost:3000/console/`), exchanged for a session cookie; as operator with the
 * operator identity provider (on the operator host, when the server has one: a session cookie
 * too) or with the operator token on any host, kept in this tab's sessionStorage (see session.ts).
 * @param need - what the page the person asked for needs; only that form is offered then.
 */
export function SignInPage({ need }: { need?: 'workspace' | 'operator' }) {
  const workspace = workspaceOfHost();
  const credentials = useCredentials();
  const wantWorkspace = workspace !== undefined && need !== 'operator' && !credentials.workspace;
  const options = useQuery({ queryKey: ['sign-in-options', workspace], queryFn: () => signInOptions(workspace!), enabled: wantWorkspace });
  const provider = wantWorkspace ? options.data?.identity_provider : null;
  // Offered until the options say otherwise, so the form is there at once (keyboard users tab to it).
  const offerKey = wantWorkspace && (options.data?.key_sign_in ?? true);
  const offerToken = need !== 'workspace' && !isOperator(credentials);
  // The operator identity provider exists on the operator host only (not a workspace's).
  const operatorOptions = useQuery({ queryKey: ['operator-sign-in-options'], queryFn: operatorSignInOptions, enabled: offerToken && workspace === undefined });
  const operatorProvider = offerToken && workspace === undefined ? operatorOptions.data : null;
  return (
    <Page title="Sign in">
      <div class="sign-in">
        {provider && (
          <SignInWithProvider
            id="sign-in-idp-title"
            title={`Workspace “${workspace}”`}
            text="Owners of the workspace sign in with their company account."
            href="/console/oidc/start"
            host={provider.host}
          />
        )}
        {operatorProvider && (
          <SignInWithProvider
            id="sign-in-operator-idp-title"
            title="Operator"
            text="Operators sign in with their company account to manage workspaces, keys, products and the audit log."
            href="/console/operator/oidc/start"
            host={operatorProvider.host}
          />
        )}
        {offerKey && <SignInWith kind="workspace" workspace={workspace} />}
        {offerToken && <SignInWith kind="adminToken" />}
        {need === 'workspace' && workspace === undefined && (
          <p class="notice">
            A workspace’s users are reached on the workspace’s own address, for example{' '}
            <code>http://demo.localhost:3000/console/</code>.
          </p>
        )}
      </div>
    </Page>
  );
}
