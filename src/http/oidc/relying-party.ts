import { LRUCache } from 'lru-cache';
import * as oidc from 'openid-client';
import { isLoopbackUrl } from '../../config/loopback.ts';
import type { IdentityProvider } from '../../core/identity-providers/identity-provider-repository.ts';
import type { VerifiedIdentity } from '../../core/sessions/person-sign-in.ts';
import { guardedFetch } from '../../outbound/guarded-fetch.ts';
import { assertOutboundUrlAllowed, OutboundRefusedError, parseOutboundUrl, type OutboundPolicy } from '../../outbound/outbound-guard.ts';

/**
 * What the relying party needs of a provider; `revision` names this exact configuration.
 * `clientSecret` gives the secret in clear and is called only when the client is built for
 * the token request (a workspace's is stored encrypted: docs/security.md, "Secrets at rest").
 */
export interface ProviderSettings extends Pick<IdentityProvider, 'issuer' | 'clientId' | 'revision'> {
  clientSecret(): string;
}

/** How long a discovered provider is used before it is discovered again, in ms. */
const DISCOVERY_TTL_MS = 10 * 60_000;
/**
 * How long a failed discovery is remembered, in ms: anonymous sign-in starts cause at most one
 * discovery per provider in this time (docs/security.md, "Outbound connections").
 */
const FAILED_DISCOVERY_TTL_MS = 60_000;

/**
 * Refuses endpoints of a discovery document the server could not safely use: the token
 * endpoint and key set must be present, and with the user info endpoint reachable under the
 * outbound policy now (each request checks again); the authorization endpoint, where the
 * browser goes, https (http only on loopback, where the policy allows http at all).
 * @throws OutboundRefusedError for an endpoint the policy refuses; an Error with code
 * `OAUTH_INVALID_SERVER_METADATA` for a missing one.
 */
async function assertEndpointsAllowed(config: oidc.Configuration, policy: OutboundPolicy): Promise<void> {
  const metadata = config.serverMetadata();
  const named = (name: string, value: unknown): string => {
    if (typeof value !== 'string') throw Object.assign(new Error(`the discovery document has no ${name}`), { code: 'OAUTH_INVALID_SERVER_METADATA' });
    return value;
  };
  for (const name of ['token_endpoint', 'jwks_uri', 'userinfo_endpoint'] as const) {
    if (name === 'userinfo_endpoint' && metadata[name] === undefined) continue;
    try {
      await assertOutboundUrlAllowed(named(name, metadata[name]), policy, 'refuse');
    } catch (error) {
      if (error instanceof OutboundRefusedError) throw new OutboundRefusedError(error.kind, `${name}: ${error.message}`);
      throw error;
    }
  }
  const authorization = parseOutboundUrl(named('authorization_endpoint', metadata.authorization_endpoint), policy);
  if (authorization.protocol === 'http:' && !isLoopbackUrl(authorization)) {
    throw new OutboundRefusedError('http', `authorization_endpoint: http:// only on loopback, not ${authorization.host}`);
  }
}

/**
 * `client_secret_basic` with the secret decrypted only when a request needs it (the token
 * request), not at discovery: a discovery the guard refuses never touches the secret
 * (docs/security.md, "Secrets at rest").
 */
function clientAuthentication(provider: Pick<ProviderSettings, 'clientSecret'>): oidc.ClientAuth {
  return (...args) => oidc.ClientSecretBasic(provider.clientSecret())(...args);
}

/**
 * Discovers a provider now, without the cache: its issuer and every request openid-client
 * makes for it pass the outbound guard (`customFetch`), the discovery document's issuer must be
 * the configured one, and its endpoints are checked by the policy. The client authenticates
 * with `client_secret_basic`; ID token signatures are verified.
 * @throws OutboundRefusedError (possibly as the cause of an openid-client ClientError) when
 * the guard refuses, kind `url` when the issuer does not parse; the openid-client error when
 * discovery fails (unreachable, not an issuer, issuer mismatch).
 */
export async function discoverProvider(provider: Omit<ProviderSettings, 'revision'>, policy: OutboundPolicy): Promise<oidc.Configuration> {
  const issuer = parseOutboundUrl(provider.issuer, policy);
  // The ID token's signature is checked against the provider's keys too, not only trusted
  // for arriving over TLS (OpenID Connect Core §3.1.3.7 allows either): a token altered on
  // the way, or by a proxy in between, is refused. Plain http gets this far only where the
  // policy allows it (loopback, WEBHOOK_ALLOW_HTTP); the guarded fetch checks every request.
  const execute = issuer.protocol === 'http:' ? [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks] : [oidc.enableNonRepudiationChecks];
  const config = await oidc.discovery(issuer, provider.clientId, undefined, clientAuthentication(provider), {
    execute,
    timeout: 10,
    [oidc.customFetch]: guardedFetch(policy),
  });
  await assertEndpointsAllowed(config, policy);
  return config;
}

/** The relying party of this server: how it finds the OpenID Providers it signs people in with. */
export interface RelyingParty {
  /**
   * The provider's configuration for a sign-in: {@link discoverProvider} once per revision, kept
   * 10 minutes, a failure kept {@link FAILED_DISCOVERY_TTL_MS}, so however many requests arrive,
   * a provider is discovered at most once a minute by this relying party.
   * @throws what {@link discoverProvider} throws, and SecretDecryptionError when the client
   *   secret cannot be decrypted (docs/security.md, "Secrets at rest").
   */
  configuration(provider: ProviderSettings): Promise<oidc.Configuration>;
  /**
   * {@link discoverProvider} now, without the cache: the check of a provider before it is stored.
   * @throws what {@link discoverProvider} throws.
   */
  discover(provider: Omit<ProviderSettings, 'revision'>): Promise<oidc.Configuration>;
}

/**
 * The relying party under the outbound `policy`, with its own cache of discovered providers
 * (by revision: a changed configuration is a new revision, so never stale). Built once per
 * process by the composition root (server/app-dependencies.ts) and given to the app; building
 * it does no I/O. Source: OpenID Connect Discovery 1.0 §4; docs/security.md, "Outbound connections".
 */
export function createRelyingParty(policy: OutboundPolicy): RelyingParty {
  const discovered = new LRUCache<string, Promise<oidc.Configuration>>({ max: 1_000, ttl: DISCOVERY_TTL_MS });
  return {
    configuration(provider) {
      const key = provider.revision;
      let pending = discovered.get(key);
      if (!pending) {
        pending = discoverProvider(provider, policy);
        const kept = pending;
        kept.catch(() => {
          if (discovered.get(key) === kept) discovered.set(key, kept, { ttl: FAILED_DISCOVERY_TTL_MS });
        });
        discovered.set(key, pending);
      }
      return pending;
    },
    discover: (provider) => discoverProvider(provider, policy),
  };
}

/** What a sign-in keeps on the server until the provider sends the browser back. */
export interface SignInChecks {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

/** New random `state`, `nonce` and PKCE verifier (RFC 7636; 256 bits each). */
export function newChecks(): SignInChecks {
  return { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier() };
}

/** A `prompt` a sign-in may ask the provider for (OpenID Connect Core §3.1.2.1): choose an account, or log in again. */
export type SignInPrompt = 'select_account' | 'login';

/**
 * The `prompt` sent for the one asked: `select_account` only where the provider's discovery
 * lists it in `prompt_values_supported`, else `login` (every provider knows it, and it too lets
 * the person sign in as someone else).
 */
export function promptFor(config: oidc.Configuration, asked: SignInPrompt): SignInPrompt {
  const supported = config.serverMetadata().prompt_values_supported;
  return asked === 'select_account' && Array.isArray(supported) && supported.includes('select_account') ? 'select_account' : 'login';
}

/**
 * The provider's authorization URL for this sign-in: code flow, `openid email`, PKCE S256,
 * state, nonce, and the `prompt` asked for if any ({@link promptFor}).
 */
export async function authorizationUrl(config: oidc.Configuration, redirectUri: string, checks: SignInChecks, prompt?: SignInPrompt): Promise<URL> {
  return oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email',
    response_type: 'code',
    state: checks.state,
    nonce: checks.nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
    code_challenge_method: 'S256',
    ...(prompt ? { prompt: promptFor(config, prompt) } : {}),
  });
}

/** What the token endpoint gave for a verified code: the ID token's claims and the access token. */
export interface RedeemedSignIn {
  readonly claims: oidc.IDToken;
  readonly accessToken: string;
}

/**
 * Redeems the code of `callbackUrl` and verifies the ID token (signature against the
 * provider's keys, issuer, audience = our client id, expiry, nonce), the state and the PKCE
 * verifier, all by openid-client.
 * @throws the openid-client error when anything does not verify.
 */
export async function redeem(config: oidc.Configuration, callbackUrl: URL, checks: SignInChecks): Promise<RedeemedSignIn> {
  const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
    pkceCodeVerifier: checks.codeVerifier,
    expectedState: checks.state,
    expectedNonce: checks.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  if (!claims) throw new Error('the provider sent no ID token');
  return { claims, accessToken: tokens.access_token };
}

/** The UserInfo response named another subject than the ID token (OpenID Connect Core §5.3.2): its claims are not this person's. */
export class UserInfoSubjectMismatchError extends Error {
  override readonly name = 'UserInfoSubjectMismatchError';
}

/**
 * Who signed in: the ID token's `sub`, with `email` and `email_verified` from the ID token when
 * it carries the email, else from the provider's UserInfo endpoint, where OpenID Connect Core
 * §5.4 lets a provider return the claims of a requested scope (`email`) in the code flow
 * (oidc-provider at its defaults does). The UserInfo request goes through the configuration's
 * guarded fetch like every other request to the provider ({@link discoverProvider}), and its
 * `sub` must be the ID token's (§5.3.2). Without a UserInfo endpoint the ID token is all there is.
 * @throws UserInfoSubjectMismatchError when UserInfo names another `sub`; the openid-client
 *   error (OutboundRefusedError as a cause when the guard refused) when the request fails.
 */
export async function identityOf(config: oidc.Configuration, signIn: RedeemedSignIn): Promise<VerifiedIdentity> {
  const { claims } = signIn;
  if (claims.email !== undefined || config.serverMetadata().userinfo_endpoint === undefined) {
    return { sub: claims.sub, email: claims.email, email_verified: claims.email_verified };
  }
  try {
    const info = await oidc.fetchUserInfo(config, signIn.accessToken, claims.sub);
    return { sub: claims.sub, email: info.email, email_verified: info.email_verified };
  } catch (error) {
    // Not kept as the cause: openid-client's holds the response body, the person's claims.
    if ((error as { code?: unknown }).code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED') {
      throw new UserInfoSubjectMismatchError('the UserInfo response names another subject than the ID token');
    }
    throw error;
  }
}
