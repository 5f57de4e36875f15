import type { Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Repositories, Store } from '../ports.ts';
import type { IdentityProvider } from './identity-provider-repository.ts';
import type { Workspace } from '../workspaces/workspace-repository.ts';
import { requireWorkspace } from '../workspaces/require-workspace.ts';

/** A workspace's identity provider as anyone may see it: never its client secret. */
export interface IdentityProviderView {
  readonly issuer: string;
  readonly clientId: string;
  readonly revision: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** The configuration without its secret (for responses and the audit trail). */
function view(provider: IdentityProvider): IdentityProviderView {
  return { issuer: provider.issuer, clientId: provider.clientId, revision: provider.revision, createdAt: provider.createdAt, updatedAt: provider.updatedAt };
}

/**
 * Checks a configuration before it is stored (the HTTP side discovers the provider through the
 * outbound guard: http/oidc/discovery-problem.ts); rejects with the AppError saying why it
 * cannot be used.
 */
export type IdentityProviderCheck = (config: { issuer: string; clientId: string; clientSecret: string }) => Promise<void>;

/** The audit snapshot: the issuer and client id, never the secret. */
const snapshot = (provider: IdentityProvider) => ({ issuer: provider.issuer, client_id: provider.clientId });

/**
 * Sets (creates or replaces) the OpenID Connect identity provider of a workspace's console
 * sign-in (docs/security.md, "Signing in with an identity provider"), once `check` accepts it
 * (docs/security.md, "Outbound connections": nothing is stored otherwise). Every change gives
 * the configuration a new revision, which ends the sessions opened under the old one; the
 * sessions opened with a key end too, for good (a workspace whose people sign in as themselves
 * takes the console back from shared keys; finding them still open would defeat that). Audited as
 * `identity_provider.set`, without the secret.
 * @throws AppError `workspace_not_found` (404), and whatever `check` rejects with.
 */
export async function setIdentityProvider(
  store: Store,
  subdomain: string,
  config: { issuer: string; clientId: string; clientSecret: string },
  actor: Actor,
  check: IdentityProviderCheck,
): Promise<{ provider: IdentityProviderView; created: boolean }> {
  // The workspace first: an unknown one is a 404 without any call to the provider.
  await requireWorkspace(store, subdomain);
  await check(config);
  return store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    const before = await tx.identityProviders.find(workspace.id);
    const provider = await tx.identityProviders.put(workspace.id, config);
    await tx.sessions.endKeySessions(workspace.id);
    await tx.audit.append({
      workspaceId: workspace.id,
      actor,
      action: 'identity_provider.set',
      targetType: 'workspace',
      targetId: workspace.subdomain,
      before: before ? snapshot(before) : null,
      after: snapshot(provider),
    });
    return { provider: view(provider), created: !before };
  });
}

/**
 * The identity provider of a workspace, without its secret.
 * @throws AppError `workspace_not_found` (404), `identity_provider_not_found` (404).
 */
export async function getIdentityProvider(store: Store, subdomain: string): Promise<IdentityProviderView> {
  const workspace = await requireWorkspace(store, subdomain);
  return view(await requireIdentityProvider(store, workspace));
}

/**
 * Tests the stored identity provider of a workspace now, the way setting it did (`check`:
 * its discovery through the outbound guard), without changing anything: a provider that moved
 * or went away since is found before people fail to sign in (docs/api.md, "Identity provider").
 * @returns the configuration without its secret, when the test passed.
 * @throws AppError `workspace_not_found` (404), `identity_provider_not_found` (404), and
 *   whatever `check` rejects with.
 */
export async function testIdentityProvider(store: Store, subdomain: string, check: IdentityProviderCheck): Promise<IdentityProviderView> {
  const provider = await requireIdentityProvider(store, await requireWorkspace(store, subdomain));
  await check({ issuer: provider.issuer, clientId: provider.clientId, clientSecret: store.openSecret(provider.clientSecret) });
  return view(provider);
}

/**
 * The full configuration (secret included) of a workspace's identity provider, for the sign-in.
 * @throws AppError `identity_provider_not_found` (404).
 */
export async function requireIdentityProvider(store: Repositories, workspace: Workspace): Promise<IdentityProvider> {
  const provider = await store.identityProviders.find(workspace.id);
  if (!provider) throw new AppError('identity_provider_not_found', `Workspace "${workspace.subdomain}" has no identity provider.`);
  return provider;
}

/**
 * Removes a workspace's identity provider: its people's sessions end, and the console takes
 * the key sign-in again (unless `CONSOLE_KEY_SIGN_IN=never`). Audited as `identity_provider.removed`.
 * @throws AppError `workspace_not_found` (404), `identity_provider_not_found` (404).
 */
export async function removeIdentityProvider(store: Store, subdomain: string, actor: Actor): Promise<void> {
  await store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    const before = await requireIdentityProvider(tx, workspace);
    await tx.identityProviders.delete(workspace.id);
    await tx.audit.append({
      workspaceId: workspace.id,
      actor,
      action: 'identity_provider.removed',
      targetType: 'workspace',
      targetId: workspace.subdomain,
      before: snapshot(before),
      after: null,
    });
  });
}
