import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { guardedFetch } from '../../src/outbound/guarded-fetch.ts';
import { addressRefusal, OutboundRefusedError } from '../../src/outbound/outbound-guard.ts';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { ADMIN_TOKEN, BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json as readJson } from '../helpers/json.ts';

/** A loopback HTTP server answering with `handle`, counting the requests it gets. */
interface FakeServer {
  readonly base: string;
  readonly requests: string[];
  close(): Promise<void>;
}

async function fakeServer(handle: (base: string, req: IncomingMessage, res: ServerResponse) => void): Promise<FakeServer> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    handle(base, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A discovery document of `base` (its own issuer), with `overrides`. */
const discoveryDocument = (base: string, overrides: Record<string, unknown> = {}) => ({
  issuer: base,
  authorization_endpoint: `${base}/auth`,
  token_endpoint: `${base}/token`,
  jwks_uri: `${base}/jwks`,
  response_types_supported: ['code'],
  subject_types_supported: ['public'],
  id_token_signing_alg_values_supported: ['RS256'],
  ...overrides,
});

const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** A port nothing listens on (a server's, closed). */
async function closedPort(): Promise<number> {
  const server = await fakeServer(() => {});
  const port = Number(new URL(server.base).port);
  await server.close();
  return port;
}

/*
 * Identity providers' URLs pass the outbound guard (docs/security.md, "Outbound connections"):
 * checked by discovering the provider when it is saved (422 naming the problem, nothing
 * stored), on every request the relying party makes, with discovery (and its failure) cached,
 * and no 5xx from a configuration stored before these checks. Every target is on 127.0.0.1;
 * the harness's WEBHOOK_LOOPBACK_ONLY refuses anything else before connecting.
 */
describe(`identity providers behind the outbound guard [${BACKEND}]`, () => {
  let ctx: TestContext;
  let op: TestOpenIdProvider;

  before(async () => {
    // The test provider is plain http on loopback: allowed only with WEBHOOK_ALLOW_HTTP.
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    op = await startOpenIdProvider(['http://idp.localhost/console/oidc/callback']);
  });
  after(async () => {
    await op?.close();
    await ctx?.close();
  });

  const path = (ws: TestWorkspace) => `/admin/v1/workspaces/${ws.subdomain}/identity-provider`;
  const put = (app: FastifyInstance, ws: TestWorkspace, issuer: string) =>
    app.inject({ method: 'PUT', url: path(ws), headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { issuer, client_id: op.clientId, client_secret: op.clientSecret } });
  const stored = async (ws: TestWorkspace) => (await ctx.app.inject({ method: 'GET', url: path(ws), headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).statusCode;
  /** Asserts a 422 problem with `code` and that nothing was stored. */
  async function assertRefused(app: FastifyInstance, ws: TestWorkspace, issuer: string, code: string, detail?: RegExp): Promise<void> {
    const res = await put(app, ws, issuer);
    assert.equal(res.statusCode, 422, `${issuer} → ${res.body}`);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(readJson<'Problem'>(res).code, code, `${issuer} → ${res.body}`);
    if (detail) assert.match(readJson<'Problem'>(res).detail, detail, issuer);
    assert.equal(await stored(ws), 404, `nothing stored for ${issuer}`);
  }
  /** Stores a configuration the way rows were stored before the check at save: straight into the table. */
  async function storeDirectly(ws: TestWorkspace, issuer: string): Promise<void> {
    await ctx.database.db.execute(sql`
      insert into workspace_identity_providers (workspace_id, issuer, client_id, client_secret)
      select id, ${issuer}, 'wum-console', 'a-secret' from workspaces where subdomain = ${ws.subdomain}`);
  }
  const page = (ws: TestWorkspace, url: string) => ctx.app.inject({ method: 'GET', url, headers: { host: ws.host } });

  test('a real provider on loopback is saved once its discovery succeeds', async () => {
    const ws = await ctx.createWorkspace('idpok');
    const res = await put(ctx.app, ws, op.issuer);
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(readJson<'setIdentityProvider'>(res).issuer, op.issuer);
  });

  test('refused at save with 422 naming the problem, nothing stored: http, addresses, unreachable, bad document, issuer mismatch, redirect, endpoints', async () => {
    const ws = await ctx.createWorkspace('idpno');
    // Plain http where the operator did not allow it, and to anything but loopback where they did.
    const httpOff = await ctx.buildApp({ WEBHOOK_ALLOW_HTTP: 'false' });
    await assertRefused(httpOff, ws, op.issuer, 'identity_provider_http_refused', /WEBHOOK_ALLOW_HTTP/);
    await assertRefused(ctx.app, ws, 'http://10.0.0.1/op', 'identity_provider_http_refused', /only go to loopback/);
    // Addresses that are not public: metadata and link-local, private, and loopback over https
    // (the last one refused by the guard's own rule, not only the harness's loopback switch).
    await assertRefused(ctx.app, ws, 'https://169.254.169.254/latest/meta-data', 'identity_provider_address_refused');
    await assertRefused(ctx.app, ws, 'https://[::ffff:127.0.0.1]/op', 'identity_provider_address_refused', /IPv6 form/);
    const httpsPort = await closedPort();
    await assertRefused(ctx.app, ws, `https://127.0.0.1:${httpsPort}/op`, 'identity_provider_address_refused', /OUTBOUND_ALLOWED_NETWORKS/);
    assert.match(addressRefusal('169.254.169.254', 'https:', { allowHttp: false, allowedNetworks: [] }) ?? '', /linkLocal/);
    assert.match(addressRefusal('10.0.0.1', 'https:', { allowHttp: false, allowedNetworks: [] }) ?? '', /private/);
    // Allowed networks open loopback over https: the guard lets it through, and nothing answers there.
    const allowed = await ctx.buildApp({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
    await assertRefused(allowed, ws, `https://127.0.0.1:${httpsPort}/op`, 'identity_provider_unreachable');
    await assertRefused(ctx.app, ws, `http://127.0.0.1:${await closedPort()}/op`, 'identity_provider_unreachable');

    const notAnIssuer = await fakeServer((_, __, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hello</html>'));
    const elsewhere = await fakeServer((base, _, res) => json(res, 200, discoveryDocument(base, { issuer: 'http://127.0.0.1:1/someone-else' })));
    const redirecting = await fakeServer((_, __, res) => res.writeHead(302, { location: `${op.issuer}/.well-known/openid-configuration` }).end());
    const metadataToken = await fakeServer((base, _, res) => json(res, 200, discoveryDocument(base, { token_endpoint: 'https://169.254.169.254/token' })));
    const loopbackJwks = await fakeServer((base, _, res) => json(res, 200, discoveryDocument(base, { jwks_uri: `https://127.0.0.1:${httpsPort}/jwks` })));
    const noJwks = await fakeServer((base, _, res) => json(res, 200, discoveryDocument(base, { jwks_uri: undefined })));
    try {
      await assertRefused(ctx.app, ws, notAnIssuer.base, 'identity_provider_discovery_invalid');
      await assertRefused(ctx.app, ws, elsewhere.base, 'identity_provider_issuer_mismatch');
      await assertRefused(ctx.app, ws, redirecting.base, 'identity_provider_discovery_invalid', /redirect/);
      await assertRefused(ctx.app, ws, noJwks.base, 'identity_provider_discovery_invalid', /jwks_uri/);
      await assertRefused(ctx.app, ws, metadataToken.base, 'identity_provider_address_refused', /token_endpoint/);
      await assertRefused(ctx.app, ws, loopbackJwks.base, 'identity_provider_address_refused', /jwks_uri: .*OUTBOUND_ALLOWED_NETWORKS/);
      assert.deepEqual(redirecting.requests, ['/.well-known/openid-configuration'], 'the redirect was not followed');
      // The network allowed, the same document is accepted (its key set is fetched at sign-in, through the guard again).
      assert.equal((await put(allowed, ws, loopbackJwks.base)).statusCode, 201);
    } finally {
      for (const server of [notAnIssuer, elsewhere, redirecting, metadataToken, loopbackJwks, noJwks]) await server.close();
    }
  });

  test('an unparseable issuer is a 400 at save; a row stored before that check answers 409 on the options and a refusal page at the start, never a 5xx', async () => {
    const ws = await ctx.createWorkspace('idpbad');
    for (const issuer of ['http://127.0.0.1:99999', 'http://h:1:2/x']) {
      const res = await put(ctx.app, ws, issuer);
      assert.equal(res.statusCode, 400, `${issuer} → ${res.body}`);
      assert.equal(readJson<'Problem'>(res).code, 'validation_failed');
      assert.equal(readJson<'Problem'>(res).errors![0]!.field, 'issuer');
      assert.equal(await stored(ws), 404);
    }
    for (const issuer of ['http://127.0.0.1:99999', 'http://h:1:2/x']) {
      const legacy = await ctx.createWorkspace('idplegacy');
      await storeDirectly(legacy, issuer);
      const options = await page(legacy, '/console/oidc/options');
      assert.equal(options.statusCode, 409, `${issuer} → ${options.body}`);
      assert.equal(readJson<'Problem'>(options).code, 'identity_provider_misconfigured');
      const start = await page(legacy, '/console/oidc/start');
      assert.equal(start.statusCode, 409, `${issuer} → ${start.body}`);
      assert.match(start.headers['content-type'] as string, /^text\/html/);
      assert.match(start.body, /cannot be used by this server/);
    }
  });

  test('a stored issuer or endpoint the guard refuses is never called: the sign-in start answers a refusal page', async () => {
    const metadata = await ctx.createWorkspace('idpmeta');
    await storeDirectly(metadata, 'https://169.254.169.254/latest/meta-data');
    const start = await page(metadata, '/console/oidc/start');
    assert.equal(start.statusCode, 409, start.body);
    assert.match(start.body, /cannot be used by this server/);

    const tokenElsewhere = await fakeServer((base, _, res) => json(res, 200, discoveryDocument(base, { token_endpoint: 'https://169.254.169.254/token' })));
    try {
      const ws = await ctx.createWorkspace('idpendpoint');
      await storeDirectly(ws, tokenElsewhere.base);
      const refused = await page(ws, '/console/oidc/start');
      assert.equal(refused.statusCode, 409, refused.body);
    } finally {
      await tokenElsewhere.close();
    }
  });

  test('anonymous sign-in starts cause one discovery per provider, a failed one included (10 starts, 1 fetch)', async () => {
    const failing = await fakeServer((_, __, res) => res.writeHead(500).end());
    const working = await fakeServer((base, _, res) => json(res, 200, discoveryDocument(base)));
    try {
      const broken = await ctx.createWorkspace('idpcount');
      await storeDirectly(broken, failing.base);
      for (let i = 0; i < 10; i += 1) assert.equal((await page(broken, '/console/oidc/start')).statusCode, 502);
      assert.equal(failing.requests.length, 1, `fetches: ${failing.requests.join(', ')}`);

      const ws = await ctx.createWorkspace('idpcount');
      await storeDirectly(ws, working.base);
      const starts = await Promise.all(Array.from({ length: 10 }, () => page(ws, '/console/oidc/start')));
      for (const start of starts) {
        assert.equal(start.statusCode, 302, start.body);
        assert.ok((start.headers.location as string).startsWith(`${working.base}/auth?`));
      }
      assert.equal(working.requests.length, 1, `fetches: ${working.requests.join(', ')}`);
    } finally {
      await failing.close();
      await working.close();
    }
  });

  test('the fetch openid-client is given refuses before connecting, and never follows a redirect', async () => {
    const target = await fakeServer((base, req, res) => {
      if (req.url === '/moved') res.writeHead(307, { location: `${base}/here` }).end();
      else json(res, 200, { ok: true });
    });
    try {
      const port = new URL(target.base).port;
      const strict = { allowHttp: false, allowedNetworks: [] };
      const refusal = async (fetch: ReturnType<typeof guardedFetch>, url: string, kind: string) => {
        await assert.rejects(fetch(url, { method: 'GET' }), (error: unknown) => error instanceof OutboundRefusedError && error.kind === kind, url);
      };
      await refusal(guardedFetch(strict), `${target.base}/x`, 'http');
      await refusal(guardedFetch(strict), `https://127.0.0.1:${port}/x`, 'address');
      await refusal(guardedFetch({ ...strict, allowHttp: true }), `http://[::ffff:127.0.0.1]:${port}/x`, 'address');
      assert.deepEqual(target.requests, [], 'nothing refused reached the server');
      const loopback = guardedFetch({ allowHttp: true, allowedNetworks: [], loopbackOnly: true });
      const answer = await loopback(`${target.base}/x`, { method: 'GET' });
      assert.equal(answer.status, 200);
      assert.deepEqual(await answer.json(), { ok: true });
      await refusal(loopback, `${target.base}/moved`, 'redirect');
      assert.deepEqual(target.requests, ['/x', '/moved'], 'the redirect was not followed');
    } finally {
      await target.close();
    }
  });

  test('the operator identity provider from the settings passes the same guard', async () => {
    const tokenElsewhere = await fakeServer((base, _, res) => json(res, 200, discoveryDocument(base, { token_endpoint: 'https://169.254.169.254/token' })));
    try {
      const env = { OPERATOR_OIDC_CLIENT_ID: 'wum', OPERATOR_OIDC_CLIENT_SECRET: 'a-secret', OPERATOR_EMAILS: 'ada@example.com' };
      for (const issuer of [tokenElsewhere.base, `https://127.0.0.1:${await closedPort()}`]) {
        const app = await ctx.buildApp({ ...env, OPERATOR_OIDC_ISSUER: issuer });
        const start = await app.inject({ method: 'GET', url: '/console/operator/oidc/start', headers: { host: 'localhost:3000' } });
        assert.equal(start.statusCode, 409, `${issuer} → ${start.body}`);
        assert.match(start.body, /cannot be used by this server/);
      }
    } finally {
      await tokenElsewhere.close();
    }
  });
});
