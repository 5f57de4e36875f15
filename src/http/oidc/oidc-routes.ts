import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SessionConfig } from '../../config/load-config.ts';
import { AppError } from '../../core/errors.ts';
import type { Store } from '../../core/ports.ts';
import type { IdentityProvider } from '../../core/identity-providers/identity-provider-repository.ts';
import type { Workspace } from '../../core/workspaces/workspace-repository.ts';
import { admitPerson } from '../../core/sessions/person-sign-in.ts';
import { openPersonSession } from '../../core/sessions/sessions-service.ts';
import { subdomainOf } from '../plugins/tenant.ts';
import { limitSignInStarts, type SignInStartLimits } from '../rate-limit/sign-in-start-limit.ts';
import type { ProviderSettings, RelyingParty } from './relying-party.ts';
import { CallbackQuery, consoleSchema, SignInOptionsResponses, StartQuery, WorkspaceSignInResponses } from '../schemas/console.ts';
import { finishSignIn, startSignIn, verifySignIn } from './sign-in-flow.ts';
import { sendRefusal } from './sign-in-page.ts';
import { clearedStateCookie } from './state-cookie.ts';

/** Where the console's "Sign in with your identity provider" button leads. */
export const OIDC_START_PATH = '/console/oidc/start';
/** The redirect URI registered at the provider, on each workspace's host. */
export const OIDC_CALLBACK_PATH = '/console/oidc/callback';
/** What the sign-in page offers on this host. */
export const OIDC_OPTIONS_PATH = '/console/oidc/options';

/** Options of {@link oidcRoutes}. */
export interface OidcRoutesOptions {
  readonly store: Store;
  readonly baseDomain: string;
  readonly sessions: SessionConfig;
  /** Discovers the provider, under the outbound policy (what the server may call). */
  readonly relyingParty: RelyingParty;
  /** Limits on starting sign-ins (per address, per workspace); absent: none. */
  readonly startLimits?: SignInStartLimits;
}

/**
 * The console's sign-in with a workspace's identity provider (docs/console.md, "Signing in";
 * docs/security.md, "Signing in with an identity provider"): authorization code flow with
 * PKCE, `state` and `nonce` kept on the server (the `state` also in a cookie of the browser
 * that started), the ID token verified by openid-client, then {@link admitPerson} decides
 * who enters and a person's session is opened. Refusals are pages, not JSON.
 */
export async function oidcRoutes(app: FastifyInstance, options: OidcRoutesOptions): Promise<void> {
  const { store, baseDomain, sessions, relyingParty, startLimits } = options;
  /** The provider for the relying party: its client secret decrypted only when the client is built. */
  const settings = (provider: IdentityProvider): ProviderSettings => ({ ...provider, clientSecret: () => store.openSecret(provider.clientSecret) });

  /** The workspace of this host. @throws AppError `workspace_not_found` (404). */
  async function workspaceOf(request: FastifyRequest): Promise<Workspace> {
    const subdomain = subdomainOf(request.hostname, baseDomain);
    const workspace = subdomain ? await store.workspaces.findBySubdomain(subdomain) : undefined;
    if (!workspace) throw new AppError('workspace_not_found', 'Open the console on your workspace\'s address, e.g. acme.<domain>/console/.');
    return workspace;
  }
  /** The workspace of a sign-in page's request; undefined once the refusal page is sent (no such workspace). */
  async function workspaceForPage(request: FastifyRequest, reply: FastifyReply): Promise<Workspace | undefined> {
    try {
      return await workspaceOf(request);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      const subdomain = subdomainOf(request.hostname, baseDomain);
      sendRefusal(request, reply, subdomain ? { workspace: subdomain } : {}, { status: 404, reason: 'workspace_not_found', message: error.message });
      return undefined;
    }
  }
  /** Where a refusal of `workspace`'s sign-in happened: its subdomain, and the start to try again at. */
  const placeOf = (workspace: Workspace) => ({ workspace: workspace.subdomain, startPath: OIDC_START_PATH });

  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const described = (summary: string) => ({ summary, security: [] });

  api.get(OIDC_OPTIONS_PATH, { schema: consoleSchema({ ...described('The sign-ins this workspace\'s host offers'), response: SignInOptionsResponses }) }, async (request) => {
    const workspace = await workspaceOf(request);
    const provider = await store.identityProviders.find(workspace.id);
    const keySignIn = sessions.keySignIn === 'always' || (sessions.keySignIn === 'auto' && !provider);
    if (!provider) return { identity_provider: null, key_sign_in: keySignIn };
    // A row stored before the issuer was checked at save may not parse.
    const issuer = URL.parse(provider.issuer);
    if (!issuer) throw new AppError('identity_provider_misconfigured', 'The workspace\'s identity provider has an issuer that is not a URL; ask the operator to set it again.');
    return { identity_provider: { host: issuer.host }, key_sign_in: keySignIn };
  });

  // Limited before anything is looked up: every start is stored and may reach the provider.
  const limited = startLimits ? { onRequest: limitSignInStarts(startLimits, (request) => subdomainOf(request.hostname, baseDomain)) } : {};
  const startSchema = consoleSchema({ ...described('Start a sign-in with the workspace\'s identity provider'), querystring: StartQuery, response: WorkspaceSignInResponses.start });
  app.get<{ Querystring: StartQuery }>(OIDC_START_PATH, { schema: startSchema, ...limited }, async (request, reply) => {
    const workspace = await workspaceForPage(request, reply);
    if (!workspace) return reply;
    const provider = await store.identityProviders.find(workspace.id);
    if (!provider) {
      const message = `Workspace "${workspace.subdomain}" has no identity provider to sign in with.`;
      return sendRefusal(request, reply, { workspace: workspace.subdomain }, { status: 404, reason: 'no_identity_provider', message });
    }
    return startSignIn(
      request,
      reply,
      placeOf(workspace),
      settings(provider),
      relyingParty,
      OIDC_CALLBACK_PATH,
      (stateHash, pending) => store.identityProviders.saveSignIn(workspace.id, stateHash, { ...pending, idpRevision: provider.revision }),
      'The workspace\'s identity provider cannot be reached or is not an OpenID Provider. Try again later or ask the operator.',
    );
  });

  const callbackSchema = consoleSchema({ ...described('Where the identity provider sends the browser back'), querystring: CallbackQuery, response: WorkspaceSignInResponses.callback });
  // A query the schema refuses is answered with a refusal page (verifySignIn), not JSON: a person is reading.
  app.get<{ Querystring: CallbackQuery }>(OIDC_CALLBACK_PATH, { schema: callbackSchema, attachValidation: true }, async (request, reply) => {
    reply.header('set-cookie', clearedStateCookie(request));
    const workspace = await workspaceForPage(request, reply);
    if (!workspace) return reply;
    let provider: IdentityProvider | undefined;
    const identity = await verifySignIn(
      request,
      reply,
      placeOf(workspace),
      relyingParty,
      (stateHash) => store.identityProviders.takeSignIn(workspace.id, stateHash),
      async (pending) => {
        provider = await store.identityProviders.find(workspace.id);
        return provider && provider.revision === pending.idpRevision ? settings(provider) : 'The workspace\'s identity provider changed during the sign-in. Start the sign-in again.';
      },
    );
    if (!identity || !provider) return reply;
    const { issuer, revision } = provider;
    return finishSignIn(
      request,
      reply,
      placeOf(workspace),
      async () => openPersonSession(store, workspace, await admitPerson(store, workspace, issuer, identity), revision, sessions, request.id),
      'oidc',
    );
  });

}
