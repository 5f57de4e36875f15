import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { API, BACKEND, createTestContext, type TestContext } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/** `PUT/GET/DELETE /admin/v1/workspaces/{subdomain}/identity-provider` (docs/api.md, "Identity provider"). */
describe(`admin API: a workspace's identity provider [${BACKEND}]`, () => {
  let ctx: TestContext;
  let op: TestOpenIdProvider;
  /** A configuration the save's discovery accepts: the test provider on loopback. */
  let config: { issuer: string; client_id: string; client_secret: string };
  before(async () => {
    // The test provider is plain http on loopback, which the outbound guard allows only with WEBHOOK_ALLOW_HTTP.
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    op = await startOpenIdProvider(['http://idp.localhost/console/oidc/callback']);
    config = { issuer: op.issuer, client_id: 'wum-console', client_secret: 'very-secret-value' };
  });
  after(async () => {
    await op?.close();
    await ctx?.close();
  });

  test('set, replace, show (never the secret), remove; each change audited without the secret', async () => {
    const ws = await ctx.createWorkspace('idp');
    const path = `/workspaces/${ws.subdomain}/identity-provider`;
    assert.equal(json<'Problem'>(await ctx.admin('GET', path)).code, 'identity_provider_not_found');

    const created = await ctx.admin('PUT', path, config);
    assert.equal(created.statusCode, 201, created.body);
    const body = json<'setIdentityProvider'>(created);
    assert.equal(body.issuer, config.issuer);
    assert.equal(body.client_id, 'wum-console');
    assert.equal(body.client_secret_set, true);
    assert.equal(body.redirect_path, '/console/oidc/callback');
    assert.ok(!created.body.includes(config.client_secret));

    const replaced = await ctx.admin('PUT', path, { ...config, client_id: 'other' });
    assert.equal(replaced.statusCode, 200, replaced.body);
    assert.notEqual(json<'setIdentityProvider'>(replaced).revision, body.revision, 'a change is a new revision');

    const shown = await ctx.admin('GET', path);
    assert.equal(shown.statusCode, 200);
    assert.equal(json<'getIdentityProvider'>(shown).client_id, 'other');
    assert.ok(!shown.body.includes(config.client_secret));

    const removed = await ctx.admin('DELETE', path);
    assert.equal(removed.statusCode, 204);
    assert.equal((await ctx.admin('DELETE', path)).statusCode, 404);

    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?action=identity_provider.set`);
    assert.equal(audit.statusCode, 200, audit.body);
    assert.equal(json<'listWorkspaceAuditEvents'>(audit).audit_events.length, 2);
    assert.ok(!audit.body.includes(config.client_secret), 'the secret is not in the audit trail');
    const removal = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?action=identity_provider.removed`);
    assert.equal(json<'listWorkspaceAuditEvents'>(removal).audit_events.length, 1);
    assert.equal(json<'listWorkspaceAuditEvents'>(removal).audit_events[0]!.actor.type, 'operator');
  });

  test('bad input is a 400 validation_failed; an unknown workspace a 404; nothing stored', async () => {
    const ws = await ctx.createWorkspace('idpbad');
    const path = `/workspaces/${ws.subdomain}/identity-provider`;
    for (const body of [
      { ...config, issuer: 'not a url' },
      { ...config, issuer: 'ftp://127.0.0.1/x' },
      { ...config, client_id: '' },
      { issuer: config.issuer, client_id: 'x' },
      { ...config, extra: 1 },
    ]) {
      const res = await ctx.admin('PUT', path, body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)} → ${res.body}`);
      assert.equal(json<'Problem'>(res).code, 'validation_failed');
    }
    assert.equal((await ctx.admin('GET', path)).statusCode, 404);
    assert.equal(json<'Problem'>(await ctx.admin('PUT', '/workspaces/nope-idp/identity-provider', config)).code, 'workspace_not_found');
  });

  test('once a workspace has an identity provider, its key no longer opens a console session', async () => {
    const ws = await ctx.createWorkspace('idpkey');
    const signIn = () =>
      ctx.app.inject({ method: 'POST', url: `${API}/console/session`, headers: { host: ws.host, 'x-api-key': ws.apiKey, origin: `http://${ws.host}` } });
    assert.equal((await signIn()).statusCode, 201);
    await ctx.admin('PUT', `/workspaces/${ws.subdomain}/identity-provider`, config);
    const refused = await signIn();
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(json<'Problem'>(refused).code, 'key_sign_in_disabled');
    assert.equal(refused.headers['set-cookie'], undefined);
    await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/identity-provider`);
    assert.equal((await signIn()).statusCode, 201);
  });

  test('the sign-in page\'s options, and the sign-in refused with a page when there is no provider or no sign-in under way', async () => {
    const ws = await ctx.createWorkspace('idpopt');
    const get = (url: string, headers: Record<string, string> = {}) => ctx.app.inject({ method: 'GET', url, headers: { host: ws.host, ...headers } });
    assert.deepEqual((await get('/console/oidc/options')).json(), { identity_provider: null, key_sign_in: true });
    const none = await get('/console/oidc/start');
    assert.equal(none.statusCode, 404);
    assert.match(none.headers['content-type'] as string, /^text\/html/);
    assert.match(none.body, /has no identity provider/);

    await ctx.admin('PUT', `/workspaces/${ws.subdomain}/identity-provider`, config);
    assert.deepEqual((await get('/console/oidc/options')).json(), { identity_provider: { host: new URL(op.issuer).host }, key_sign_in: false });
    const unknownState = await get('/console/oidc/callback?code=x&state=never-issued');
    assert.equal(unknownState.statusCode, 400);
    assert.match(unknownState.headers['content-type'] as string, /^text\/html/);
    assert.match(unknownState.body, /already used or has expired/);
    assert.equal((await get('/console/oidc/callback?error=access_denied')).statusCode, 403);
    const elsewhere = await ctx.app.inject({ method: 'GET', url: '/console/oidc/start', headers: { host: 'localhost' } });
    assert.equal(elsewhere.statusCode, 404, 'not on a workspace host');
    assert.match(elsewhere.headers['content-type'] as string, /^text\/html/);
    assert.match(elsewhere.body, /Sign-in refused/);
    for (const url of ['/console/oidc/start', '/console/oidc/callback?code=x&state=y']) {
      const unknown = await ctx.app.inject({ method: 'GET', url, headers: { host: 'no-such-workspace.localhost' } });
      assert.equal(unknown.statusCode, 404, url);
      assert.match(unknown.body, /Sign-in refused/, url);
    }
    assert.equal((await ctx.app.inject({ method: 'POST', url: '/console/oidc/start', headers: { host: ws.host } })).statusCode, 405);
  });
});
