import { LRUCache } from 'lru-cache';
import * as oidc from 'openid-client';
import { isLoopbackUrl } from '../../config/loopback.ts';
import type { IdentityProvider } from '../../core/ports.ts';

/**
 * What the relying party needs of a provider; `revision` names this exact configuration.
 * `clientSecret` gives the secret in clear and is called only when the client is built for
 * the token request (a workspace's is stored encrypted: docs/security.md, "Secrets at rest").
 */
export interface ProviderSettings extends Pick<IdentityProvider, 'issuer' | 'clientId' | 'revision'> {
  clientSecret(): string;
}

/** Discovered providers, by revision (a changed configuration is a new revision, so never stale). */
const discovered = new LRUCache<string, Promise<oidc.Configuration>>({ max: 1_000, ttl: 10 * 60_000 });


/**
 * The relying party's view of a provider (a workspace's, or the operators'): its discovery document fetched once per
 * revision, the client authenticated with `client_secret_basic`, ID token signatures verified. Plain http is allowed only for
 * a loopback issuer (tests, local development); anything else must be https.
 * @throws the openid-client error when discovery fails (unreachable, not an issuer); SecretDecryptionError
 *   when the client secret cannot be decrypted.
 */
export function relyingParty(provider: ProviderSettings): Promise<oidc.Configuration> {
  let pending = discovered.get(provider.revision);
  if (!pending) {
    const issuer = new URL(provider.issuer);
    const insecure = issuer.protocol === 'http:' && isLoopbackUrl(issuer);
    // The ID token's signature is checked against the provider's keys too, not only trusted
    // for arriving over TLS (OpenID Connect Core §3.1.3.7 allows either): a token altered on
    // the way, or by a proxy in between, is refused.
    const execute = insecure ? [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks] : [oidc.enableNonRepudiationChecks];
    pending = oidc.discovery(issuer, provider.clientId, undefined, oidc.ClientSecretBasic(provider.clientSecret()), { execute, timeout: 10 });
    pending.catch(() => discovered.delete(provider.revision));
    discovered.set(provider.revision, pending);
  }
  return pending;
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

/** The provider's authorization URL for this sign-in: code flow, `openid email`, PKCE S256, state, nonce. */
export async function authorizationUrl(config: oidc.Configuration, redirectUri: string, checks: SignInChecks): Promise<URL> {
  return oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email',
    response_type: 'code',
    state: checks.state,
    nonce: checks.nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
    code_challenge_method: 'S256',
  });
}

/**
 * Redeems the code of `callbackUrl` and verifies the ID token (signature against the
 * provider's keys, issuer, audience = our client id, expiry, nonce), the state and the PKCE
 * verifier, all by openid-client. Returns the ID token's claims.
 * @throws the openid-client error when anything does not verify.
 */
export async function redeem(config: oidc.Configuration, callbackUrl: URL, checks: SignInChecks): Promise<oidc.IDToken> {
  const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
    pkceCodeVerifier: checks.codeVerifier,
    expectedState: checks.state,
    expectedNonce: checks.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  if (!claims) throw new Error('the provider sent no ID token');
  return claims;
}
