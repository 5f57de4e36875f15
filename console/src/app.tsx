import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import type { ComponentChildren } from 'preact';
import { Link, Redirect, Route, Router, Switch, useLocation } from 'wouter-preact';
import { isOperator, signOut, useCredentials } from './session.ts';
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

function Header() {
  const credentials = useCredentials();
  const { workspace } = credentials;
  const operator = isOperator(credentials);
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
                <li>
                  <NavLink href="/import">Import</NavLink>
                </li>
                <li>
                  <NavLink href="/policies">Policies</NavLink>
                </li>
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
              </>
            )}
          </ul>
        </nav>
      )}
      {(workspace || operator) && (
        <button type="button" class="button sign-out" onClick={signOutAndForget}>
          Sign out
        </button>
      )}
    </header>
  );
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
              <Needs what="workspace">
                <PoliciesPage />
              </Needs>
            </Route>
            <Route path="/workspaces">
              <Needs what="operator">
                <WorkspacesPage />
              </Needs>
            </Route>
            <Route path="/workspaces/:subdomain">
              {(params: { subdomain: string }) => (
                <Needs what="operator">
                  <WorkspacePage subdomain={params.subdomain} />
                </Needs>
              )}
            </Route>
            <Route path="/workspaces/:subdomain/webhooks/:id">
              {(params: { subdomain: string; id: string }) => (
                <Needs what="operator">
                  <WebhookDeliveriesPage subdomain={params.subdomain} id={params.id} />
                </Needs>
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
            <Route component={NotFound} />
          </Switch>
        </main>
      </Router>
    </QueryClientProvider>
  );
}
