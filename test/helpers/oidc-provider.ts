import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';

/** A person at the test provider: the login typed on its page is their `sub`. */
export interface TestAccount {
  readonly email: string;
  readonly email_verified: boolean;
}

/** What the test does to the ID token on its way from the token endpoint (after signing). */
export type IdTokenRewrite = (idToken: string, sign: (claims: Record<string, unknown>) => Promise<string>) => Promise<string>;

/** What the test does to the UserInfo response's claims on their way out. */
export type UserInfoRewrite = (claims: Record<string, unknown>) => Record<string, unknown>;

/** Options of {@link startOpenIdProvider}. */
export interface OpenIdProviderOptions {
  /**
   * oidc-provider's `conformIdTokenClaims`: `true` (its default) puts the `email` scope's claims
   * in the UserInfo response only, as OpenID Connect Core §5.4 has it for the code flow; `false`
   * (this helper's default) puts them in the ID token too, as most providers do.
   */
  readonly conformIdTokenClaims?: boolean;
}

/** A running OpenID Provider on 127.0.0.1. */
export interface TestOpenIdProvider {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Accounts by login (= `sub`); add or change them at will. */
  readonly accounts: Map<string, TestAccount>;
  /** When set, the next token responses carry the ID token this returns. */
  rewriteIdToken: IdTokenRewrite | undefined;
  /** When set, the next UserInfo responses carry the claims this returns. */
  rewriteUserInfo: UserInfoRewrite | undefined;
  /** How many UserInfo requests the provider answered. */
  readonly userInfoRequests: number;
  close(): Promise<void>;
}

/**
 * Starts panva's oidc-provider (an OpenID Certified implementation) on 127.0.0.1 with one
 * confidential client for the given redirect URIs, its development login page (any login is
 * the `sub`; the password is not checked) and no consent step. Its signing key is made here
 * so a test can sign an ID token the provider did not issue (wrong audience). Where the email
 * claims go is `options.conformIdTokenClaims`'s choice.
 */
export async function startOpenIdProvider(redirectUris: readonly string[], options: OpenIdProviderOptions = {}): Promise<TestOpenIdProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const accounts = new Map<string, TestAccount>();
  const clientId = 'wum-console';
  const clientSecret = 'a-client-secret-of-at-least-32-characters';

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [...redirectUris],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['test-cookie-key-for-the-provider-only'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // By default the scope's claims in the ID token itself, as most providers send them.
    conformIdTokenClaims: options.conformIdTokenClaims ?? false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    findAccount: async (_ctx, sub) => ({
      accountId: sub,
      claims: async () => {
        const account = accounts.get(sub);
        return account ? { sub, email: account.email, email_verified: account.email_verified } : { sub };
      },
    }),
    // No consent page: the grant the console asks for is given.
    loadExistingGrant: async (ctx) => {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
      grant.addOIDCScope('openid email');
      await grant.save();
      return grant;
    },
  });

  let userInfoRequests = 0;
  const handle: TestOpenIdProvider = {
    issuer,
    clientId,
    clientSecret,
    accounts,
    rewriteIdToken: undefined,
    rewriteUserInfo: undefined,
    get userInfoRequests() {
      return userInfoRequests;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'test-key' }).sign(privateKey);
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body as { id_token?: string } | undefined;
    if (ctx.path === '/token' && handle.rewriteIdToken && body?.id_token) {
      ctx.body = { ...body, id_token: await handle.rewriteIdToken(body.id_token, sign) };
    }
    // oidc-provider's UserInfo endpoint is `/me`.
    if (ctx.path === '/me' && ctx.status === 200) {
      userInfoRequests += 1;
      if (handle.rewriteUserInfo) ctx.body = handle.rewriteUserInfo(ctx.body as Record<string, unknown>);
    }
  });
  const callback = provider.callback();
  server.on('request', (req, res) => void callback(req, res));
  return handle;
}
