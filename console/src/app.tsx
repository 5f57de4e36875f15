import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { ComponentChildren } from 'preact';
import { Link, Redirect, Route, Router, Switch, useLocation } from 'wouter-preact';
import { useEffect, useState } from 'react';
import { isOperator, restoreSessions, signOut, useCredentials } from './session.ts';
import { useScopes, useSessionInfo } from './api/session.ts';
import type { Where } from './api/where.ts';
import { EVERY_SCOPE } from '../../sdk/api-key-scopes.ts';
import { SignInPage } from './pages/sign-in.tsx';
import { UsersPage } from './pages/users.tsx';
import { NewUserPage } from './pages/new-user.tsx';
import { UserPage } from './pages/user.tsx';
import { ImportPage } from './pages/import.tsx';
import { WorkspacesPage } from './pages/workspaces.tsx';
import { WorkspacePage } from './pages/workspace.tsx';
import { WebhookDeliveriesPage } from './pages/webhook-deliveries.tsx';
import { ProductsPage } from './pages/products.tsx';
import { AuditPage } from './pages/audit.tsx';
import { AuditStreamsPage } from './pages/audit-streams.tsx';
import { PoliciesPage } from './pages/policies.tsx';
import { Page } from './components/page.tsx';

/**
 * Server data cache. `send` already retries 429/503, so queries do not retry again; data is
 * fresh for 10 s, and nothing refetches behind a person's back on window focus.
 */
const queryClient = new QueryClient({
  defaultOptions: { queries: { retry: false, staleTime: 10_000, refetchOnWindowFocus: false } },
});

/** Forgets the credentials and every cached answer (so nothing of the last person stays). */
function signOutAndForget(): void {
  signOut();
  queryClient.clear();
}

function NavLink({ href, children }: { href: string; children: ComponentChildren }) {
  const [location] = useLocation();
  const current = location === href || location.startsWith(`${href}/`);
  return (
    <Link href={href} aria-current={current ? 'page' : undefined}>
      {children}
    </Link>
  );
}

/** Who is signed in, and with which scopes: a person by email, a key by its name. */
function SignedInAs() {
  const credentials = useCredentials();
  const session = useSessionInfo();
  const who: string[] = [];
  if (credentials.workspace && session.data) {
    const { actor, scopes } = session.data;
    const label = actor.label ?? actor.type;
    const scopeText = scopes.includes(EVERY_SCOPE) ? 'every scope' : scopes.join(', ') || 'no scope';
    who.push(`${label} (${actor.type === 'person' ? 'owner' : 'API key'}) in ${credentials.workspace} · ${scopeText}`);
  }
  if (credentials.operator) who.push(`${credentials.operator} (operator)`);
  else if (credentials.adminToken) who.push('Operator (token)');
  if (who.length === 0) return null;
  return (
    <p class="signed-in-as">
      Signed in as {who.join(' · ')}
    </p>
  );
}

function Header() {
  const credentials = useCredentials();
  const { workspace } = credentials;
  const operator = isOperator(credentials);
  const scopes = useScopes();
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <span class="brand">wum console</span>
      {(workspace || operator) && (
        <nav aria-label="Main">
          <ul>
            {workspace && (
              <>
                <li>
                  <NavLink href="/users">Users</NavLink>
                </li>
                {scopes.allows('users:write') && (
                  <li>
                    <NavLink href="/import">Import</NavLink>
                  </li>
                )}
                <li>
                  <NavLink href="/policies">Policies</NavLink>
                </li>
                {OWNER_SETTINGS_SCOPES.some((scope) => scopes.allows(scope)) && (
                  <li>
                    <NavLink href="/settings">Settings</NavLink>
                  </li>
                )}
                {scopes.allows('audit:read') && (
                  <li>
                    <NavLink href="/trail">Audit trail</NavLink>
                  </li>
                )}
                {scopes.allows('audit:write') && (
                  <li>
                    <NavLink href="/streams">Audit streams</NavLink>
                  </li>
                )}
              </>
            )}
            {operator && (
              <>
                <li>
                  <NavLink href="/workspaces">Workspaces</NavLink>
                </li>
                <li>
                  <NavLink href="/products">Products</NavLink>
                </li>
                <li>
                  <NavLink href="/audit">Audit log</NavLink>
                </li>
                <li>
                  <NavLink href="/audit-streams">Audit streams</NavLink>
                </li>
              </>
            )}
          </ul>
        </nav>
      )}
      <SignedInAs />
      {(workspace || operator) && (
        <button type="button" class="button sign-out" onClick={signOutAndForget}>
          Sign out
        </button>
      )}
    </header>
  );
}

/** The scopes of the owner's Settings page: one of them opens it. */
const OWNER_SETTINGS_SCOPES = ['keys:write', 'sso:write', 'webhooks:write'];

/** Renders `page` for the owner of the signed-in workspace (inside {@link Needs} `workspace`). */
function AsOwner({ page }: { page: (where: Where) => ComponentChildren }) {
  const { workspace } = useCredentials();
  return <Needs what="workspace">{workspace && page({ as: 'owner', subdomain: workspace })}</Needs>;
}

/** Renders `page` for the operator managing `subdomain`. */
function AsOperator({ subdomain, page }: { subdomain: string; page: (where: Where) => ComponentChildren }) {
  return <Needs what="operator">{page({ as: 'operator', subdomain })}</Needs>;
}

/** Shows `children` when signed in with what they need, else the sign-in form. */
function Needs({ what, children }: { what: 'workspace' | 'operator'; children: ComponentChildren }) {
  const credentials = useCredentials();
  const signedIn = what === 'workspace' ? Boolean(credentials.workspace) : isOperator(credentials);
  return signedIn ? <>{children}</> : <SignInPage need={what} />;
}

function Home() {
  const credentials = useCredentials();
  if (credentials.workspace) return <Redirect to="/users" replace />;
  if (isOperator(credentials)) return <Redirect to="/workspaces" replace />;
  return <SignInPage />;
}

function NotFound() {
  return (
    <Page title="Page not found">
      <p>
        There is nothing at this address. <Link href="/">Go to the start page</Link>.
      </p>
    </Page>
  );
}

/** The whole console: data cache, router under `/console`, header and the pages. */
export function App() {
  // Signed in from the session cookies first, so a new tab or a shared link does not show the sign-in page.
  const [restored, setRestored] = useState(false);
  useEffect(() => void restoreSessions().then(() => setRestored(true)), []);
  if (!restored) {
    return (
      <main id="main">
        <p role="status">Loading…</p>
      </main>
    );
  }
  return (
    <QueryClientProvider client={queryClient}>
      <Router base="/console">
        <Header />
        <main id="main">
          <Switch>
            <Route path="/" component={Home} />
            <Route path="/users">
              <Needs what="workspace">
                <UsersPage />
              </Needs>
            </Route>
            <Route path="/users/new">
              <Needs what="workspace">
                <NewUserPage />
              </Needs>
            </Route>
            <Route path="/users/:email">
              {(params: { email: string }) => (
                <Needs what="workspace">
                  <UserPage email={params.email} />
                </Needs>
              )}
            </Route>
            <Route path="/import">
              <Needs what="workspace">
                <ImportPage />
              </Needs>
            </Route>
            <Route path="/policies">
              <AsOwner page={(where) => <PoliciesPage where={where} />} />
            </Route>
            <Route path="/settings">
              <AsOwner page={(where) => <WorkspacePage where={where} />} />
            </Route>
            <Route path="/settings/webhooks/:id">
              {(params: { id: string }) => <AsOwner page={(where) => <WebhookDeliveriesPage where={where} id={params.id} />} />}
            </Route>
            <Route path="/trail">
              <AsOwner page={(where) => <AuditPage where={where} />} />
            </Route>
            <Route path="/streams">
              <Needs what="workspace">
                <AuditStreamsPage side="owner" />
              </Needs>
            </Route>
            <Route path="/workspaces">
              <Needs what="operator">
                <WorkspacesPage />
              </Needs>
            </Route>
            <Route path="/workspaces/:subdomain">
              {(params: { subdomain: string }) => <AsOperator subdomain={params.subdomain} page={(where) => <WorkspacePage where={where} />} />}
            </Route>
            <Route path="/workspaces/:subdomain/policies">
              {(params: { subdomain: string }) => <AsOperator subdomain={params.subdomain} page={(where) => <PoliciesPage where={where} />} />}
            </Route>
            <Route path="/workspaces/:subdomain/webhooks/:id">
              {(params: { subdomain: string; id: string }) => (
                <AsOperator subdomain={params.subdomain} page={(where) => <WebhookDeliveriesPage where={where} id={params.id} />} />
              )}
            </Route>
            <Route path="/products">
              <Needs what="operator">
                <ProductsPage />
              </Needs>
            </Route>
            <Route path="/audit">
              <Needs what="operator">
                <AuditPage />
              </Needs>
            </Route>
            <Route path="/audit-streams">
              <Needs what="operator">
                <AuditStreamsPage side="operator" />
              </Needs>
            </Route>
            <Route component={NotFound} />
          </Switch>
        </main>
      </Router>
    </QueryClientProvider>
  );
}
