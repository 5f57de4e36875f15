import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * The sign-in callbacks validate their query (docs/api.md, "The console's routes"): what is not
 * a provider's answer — neither an `error` nor a `state`, a parameter given twice,
 * one longer than its bound — is the refusal page `400 callback_invalid` (docs/security.md,
 * "Sign-in refusals"), never JSON and never a 5xx; a well-formed answer still reaches the flow's
 * own checks. Both callbacks: a workspace's, and the operators' on the operator host.
 */
describe(`the sign-in callbacks' query [${BACKEND}]`, () => {
  let ctx: TestContext;
  let op: TestOpenIdProvider;
  let app: FastifyInstance;
  let ws: TestWorkspace;

  before(async () => {
    ctx = await createTestContext();
    ws = await ctx.createWorkspace('callback');
    op = await startOpenIdProvider(['http://localhost:3000/console/operator/oidc/callback']);
    app = await ctx.buildApp({
      OPERATOR_OIDC_ISSUER: op.issuer,
      OPERATOR_OIDC_CLIENT_ID: op.clientId,
      OPERATOR_OIDC_CLIENT_SECRET: op.clientSecret,
      OPERATOR_EMAILS: 'ada@example.com',
      WEBHOOK_ALLOW_HTTP: 'true',
    });
  });
  after(async () => {
    await op?.close();
    await ctx?.close();
  });

  /** The two callbacks: where each answers. */
  const callbacks = () => [
    { name: 'a workspace\'s', host: ws.host, path: '/console/oidc/callback' },
    { name: 'the operators\'', host: 'localhost:3000', path: '/console/operator/oidc/callback' },
  ];

  const BAD_QUERIES = {
    'nothing at all': '',
    'a code without a state': '?code=abc',
    'the state twice': '?code=abc&state=one&state=two',
    'the code twice': '?code=a&code=b&state=abc',
    'the error twice': '?error=access_denied&error=server_error',
    'a state longer than any the server issues': `?code=abc&state=${'s'.repeat(513)}`,
  };

  for (const [what, query] of Object.entries(BAD_QUERIES)) {
    test(`${what}: the refusal page 400 callback_invalid, at both callbacks`, async () => {
      for (const { name, host, path } of callbacks()) {
        const res = await app.inject({ method: 'GET', url: `${path}${query}`, headers: { host } });
        assert.equal(res.statusCode, 400, `${name}: ${res.body.slice(0, 200)}`);
        assert.match(res.headers['content-type'] as string, /^text\/html/, name);
        assert.match(res.body, /Sign-in refused/, name);
        assert.match(res.body, /not an answer of the identity provider/, name);
        assert.equal(res.headers['cache-control'], 'no-store', name);
        // The state cookie is forgotten whatever the answer, and no session is set.
        assert.doesNotMatch(String(res.headers['set-cookie']), /wum_session=/, name);
      }
    });
  }

  test('a well-formed answer reaches the flow: an unknown state is state_invalid, an error is the provider\'s; parameters a provider adds pass', async () => {
    for (const { name, host, path } of callbacks()) {
      const unknown = await app.inject({ method: 'GET', url: `${path}?code=abc&state=never-issued&scope=openid&session_state=x`, headers: { host } });
      assert.equal(unknown.statusCode, 400, name);
      assert.match(unknown.body, /already used or has expired/, name);
      const cancelled = await app.inject({ method: 'GET', url: `${path}?error=access_denied&error_description=The+user+cancelled&state=abc`, headers: { host } });
      assert.equal(cancelled.statusCode, 403, name);
      assert.match(cancelled.body, /refused the sign-in: access_denied \(The user cancelled\)/, name);
    }
  });

  test('text the database cannot store is refused before the flow as on every route: 400 invalid_parameter', async () => {
    for (const { name, host, path } of callbacks()) {
      const res = await app.inject({ method: 'GET', url: `${path}?code=abc&state=a%00b`, headers: { host } });
      assert.equal(res.statusCode, 400, name);
      assert.equal(json<'Problem'>(res).code, 'invalid_parameter', name);
    }
  });
});
