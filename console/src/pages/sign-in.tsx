import { useMutation } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { ErrorNotice } from '../components/error-notice.tsx';
import { Page } from '../components/page.tsx';
import { api, send } from '../api/client.ts';
import { setCredentials, useCredentials, workspaceOfHost } from '../session.ts';

/** The two ways in. */
type Kind = 'apiKey' | 'adminToken';

interface SignInForm {
  secret: string;
}

/**
 * One sign-in form: the secret is tried on the API it opens (the workspace's products for a
 * key, the workspace list for the operator token) and kept only when the API accepts it.
 */
function SignInWith({ kind, workspace }: { kind: Kind; workspace?: string }) {
  const { register, handleSubmit, formState } = useForm<SignInForm>();
  const attempt = useMutation({
    mutationFn: async ({ secret }: SignInForm) => {
      const value = secret.trim();
      if (kind === 'apiKey') {
        const PRODUCTS = '/api/external/v2/products';
        await send(`GET ${PRODUCTS}`, (signal) => api.GET(PRODUCTS, { headers: { 'x-api-key': value }, signal }));
      } else {
        const WORKSPACES = '/admin/v1/workspaces';
        const query = { page_size: 1 };
        await send(`GET ${WORKSPACES}`, (signal) => api.GET(WORKSPACES, { params: { query }, headers: { authorization: `Bearer ${value}` }, signal }));
      }
      // Kept only once the API accepted it.
      setCredentials({ [kind]: value });
    },
  });
  const id = `sign-in-${kind}`;
  const error = formState.errors.secret;
  return (
    <form class="card" onSubmit={handleSubmit((values) => attempt.mutate(values))} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{kind === 'apiKey' ? `Workspace “${workspace}”` : 'Operator'}</h2>
      <p>
        {kind === 'apiKey'
          ? 'Sign in with one of the workspace’s API keys to see and change its users.'
          : 'Sign in with the server’s operator token (ADMIN_TOKEN) to manage workspaces, keys, products and the audit log.'}
      </p>
      <div class="field">
        <label for={id}>{kind === 'apiKey' ? 'API key' : 'Operator token'}</label>
        <input
          id={id}
          type="password"
          autoComplete="off"
          spellcheck={false}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? `${id}-error` : undefined}
          {...register('secret', { required: kind === 'apiKey' ? 'Enter an API key.' : 'Enter the operator token.' })}
        />
        {error && (
          <p id={`${id}-error`} class="field-error">
            {error.message}
          </p>
        )}
      </div>
      {attempt.isError && <ErrorNotice error={attempt.error} title="Could not sign in" />}
      <button type="submit" class="button button-primary" disabled={attempt.isPending}>
        {attempt.isPending ? 'Signing in…' : kind === 'apiKey' ? `Sign in to ${workspace}` : 'Sign in as operator'}
      </button>
    </form>
  );
}

/**
 * The sign-in page: with a workspace API key on a workspace's own host
 * (`acme.localhost:3000/console/`), and with the operator token on any host. Secrets stay in
 * this tab's sessionStorage (see session.ts).
 * @param need - what the page the person asked for needs; only that form is offered then.
 */
export function SignInPage({ need }: { need?: Kind }) {
  const workspace = workspaceOfHost();
  const credentials = useCredentials();
  const offerKey = workspace !== undefined && need !== 'adminToken' && !credentials.apiKey;
  const offerToken = need !== 'apiKey' && !credentials.adminToken;
  return (
    <Page title="Sign in">
      <div class="sign-in">
        {offerKey && <SignInWith kind="apiKey" workspace={workspace} />}
        {offerToken && <SignInWith kind="adminToken" />}
        {need === 'apiKey' && workspace === undefined && (
          <p class="notice">
            A workspace’s users are reached on the workspace’s own address, for example{' '}
            <code>http://demo.localhost:3000/console/</code>.
          </p>
        )}
      </div>
    </Page>
  );
}
