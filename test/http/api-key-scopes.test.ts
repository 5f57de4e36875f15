import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { testClock } from '../helpers/test-clock.ts';
import { json, type ScimError } from '../helpers/json.ts';

/** Named, scoped, expiring API keys and the actor they leave in the trail (docs/security.md, "API keys and scopes"). */
describe(`API keys: names, scopes, expiry, actors [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  async function createKey(ws: TestWorkspace, body?: unknown): Promise<LightMyRequestResponse> {
    return ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, body);
  }

  async function keyFor(ws: TestWorkspace, body: unknown): Promise<{ ws: TestWorkspace; id: string; prefix: string }> {
    const res = await createKey(ws, body);
    assert.equal(res.statusCode, 201, res.body);
    const { key, id, prefix } = json<'createApiKey'>(res);
    return { ws: { ...ws, apiKey: key, apiKeyId: id }, id, prefix };
  }

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.equal(json<'Problem'>(res).code, code, res.body);
  }

  test('a key is created with a name, scopes and an expiry, and lists them with its creator', async () => {
    const ws = await ctx.createWorkspace('scoped');
    const expiresAt = new Date(Date.now() + 90 * 86_400_000).toISOString();
    const res = await createKey(ws, { name: 'provisioning', scopes: ['users:write', 'users:read'], expires_at: expiresAt });
    assert.equal(res.statusCode, 201, res.body);
    const created = json<'createApiKey'>(res);
    assert.equal(created.name, 'provisioning');
    assert.deepEqual(created.scopes, ['users:read', 'users:write'], 'in the canonical order');
    assert.equal(new Date(created.expires_at!).toISOString(), expiresAt);
    assert.deepEqual(created.created_by, { type: 'operator', id: null, label: 'operator' });

    const listed = json<'listApiKeys'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`)).api_keys;
    const key = listed.find((k) => k.id === created.id)!;
    assert.equal(key.name, 'provisioning');
    assert.deepEqual(key.scopes, ['users:read', 'users:write']);
    assert.equal(new Date(key.expires_at!).toISOString(), expiresAt);
    assert.equal('key' in key, false, 'never the plaintext');

    const audit = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`, undefined)).audit_events;
    const event = audit.find((e) => e.action === 'api_key.created' && e.target_id === created.id)!;
    const recorded = event.after as { scopes: string[]; name: string };
    assert.deepEqual(recorded.scopes, ['users:read', 'users:write']);
    assert.equal(recorded.name, 'provisioning');
  });

  test('bad key requests are 400 validation_failed: unknown scope, no scope, past expiry, unknown field', async () => {
    const ws = await ctx.createWorkspace('scoped-bad');
    for (const body of [
      { scopes: ['users:delete'] },
      { scopes: [] },
      { scopes: ['users:read', 'users:read'] },
      { expires_at: new Date(Date.now() - 1000).toISOString() },
      { expires_at: 'tomorrow' },
      { name: '' },
      { owner: 'me' },
    ]) {
      assertProblem(await createKey(ws, body), 400, 'validation_failed');
    }
    const keys = json<'listApiKeys'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`)).api_keys;
    assert.equal(keys.length, 1, 'no refused request made a key');
  });

  test('a request outside the key\'s scopes → 403 insufficient_scope naming the scope; nothing changes', async () => {
    const ws = await ctx.createWorkspace('scoped-403');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('kept@example.com') })).statusCode, 201);
    const reader = (await keyFor(ws, { name: 'reader', scopes: ['users:read'] })).ws;

    assert.equal((await ctx.api(reader, 'GET', '/users')).statusCode, 200);
    assert.equal((await ctx.api(reader, 'GET', '/users/kept@example.com')).statusCode, 200);
    const refused = await ctx.api(reader, 'POST', '/users', { body: userBody('new@example.com') });
    assertProblem(refused, 403, 'insufficient_scope');
    assert.match(json<'Problem'>(refused).detail, /users:write/);
    assert.match(refused.headers['content-type'] as string, /^application\/problem\+json/);
    assertProblem(await ctx.api(reader, 'DELETE', '/users/kept@example.com'), 403, 'insufficient_scope');
    assertProblem(await ctx.api(reader, 'GET', '/products'), 403, 'insufficient_scope');
    assertProblem(await ctx.api(reader, 'GET', '/events'), 403, 'insufficient_scope');
    // The scope is checked before the body: a malformed body still gets the 403.
    assertProblem(
      await ctx.api(reader, 'POST', '/users', { body: '{nope', headers: { 'content-type': 'application/json' } }),
      403,
      'insufficient_scope',
    );

    const users = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status: 'all' } })).users;
    assert.deepEqual(users.map((u) => u.email), ['kept@example.com']);
    assert.equal(users[0]!.status, 'active');
  });

  test('SCIM needs the scim scope, and a scim key cannot use the native API', async () => {
    const ws = await ctx.createWorkspace('scoped-scim');
    const scim = (await keyFor(ws, { name: 'okta', scopes: ['scim'] })).ws;
    const writer = (await keyFor(ws, { name: 'writer', scopes: ['users:read', 'users:write'] })).ws;
    const list = (key: TestWorkspace) =>
      ctx.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: { host: key.host, authorization: `Bearer ${key.apiKey}` } });

    assert.equal((await list(scim)).statusCode, 200);
    const refused = await list(writer);
    assert.equal(refused.statusCode, 403, refused.body);
    assert.match(json<ScimError>(refused).detail!, /scim/);
    assertProblem(await ctx.api(scim, 'GET', '/users'), 403, 'insufficient_scope');
  });

  test('an expired key is 401 invalid_api_key, like a revoked one, even while it is cached', async () => {
    const ws = await ctx.createWorkspace('scoped-expiry');
    // An app whose clock the test moves past the expiry instead of waiting for it.
    const clock = testClock();
    const app = await ctx.buildApp({}, clock.now);
    const list = (key: TestWorkspace) => app.inject({ method: 'GET', url: `${API}/users`, headers: { host: key.host, 'x-api-key': key.apiKey } });
    const soon = (await keyFor(ws, { name: 'short-lived', expires_at: new Date(Date.now() + 60_000).toISOString() })).ws;
    assert.equal((await list(soon)).statusCode, 200, 'works before it expires (and is now cached)');
    clock.advance(61_000);
    assertProblem(await list(soon), 401, 'invalid_api_key');
    assert.equal((await list(ws)).statusCode, 200, 'the other key still works');
  });

  test('changes name their actor: the key\'s id and its name and prefix, in the audit trail and the events feed', async () => {
    const ws = await ctx.createWorkspace('scoped-actor');
    const { ws: named, id, prefix } = await keyFor(ws, { name: 'hr-sync' });
    assert.equal((await ctx.api(named, 'POST', '/users', { body: userBody('ada@example.com') })).statusCode, 201);
    const expected = { type: 'api_key', id, label: `hr-sync (${prefix})` };

    const audit = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`)).audit_events;
    const created = audit.find((e) => e.action === 'user.created')!;
    assert.deepEqual(created.actor, expected);
    assert.equal(created.actor_type, 'api_key');
    assert.equal(created.actor_id, id);

    const history = json<'listUserAuditEvents'>(await ctx.api(ws, 'GET', '/users/ada@example.com/audit-events')).audit_events;
    assert.deepEqual(history[0]!.actor, expected);

    const events = json<'listEvents'>(await ctx.api(ws, 'GET', '/events')).events;
    assert.deepEqual(events[0]!.actor, expected);

    const scim = (await keyFor(ws, { name: 'okta', scopes: ['scim'] }));
    const scimAdd = await ctx.app.inject({
      method: 'POST',
      url: '/scim/v2/Users',
      headers: { host: ws.host, authorization: `Bearer ${scim.ws.apiKey}`, 'content-type': 'application/scim+json' },
      payload: { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'grace@example.com' },
    });
    assert.equal(scimAdd.statusCode, 201, scimAdd.body);
    const feed = json<'listEvents'>(await ctx.api(ws, 'GET', '/events')).events;
    assert.deepEqual(feed.at(-1)!.actor, { type: 'scim', id: scim.id, label: `okta (${scim.prefix})` });

    const byOperator = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`, undefined)).audit_events;
    assert.deepEqual(byOperator[0]!.actor, { type: 'operator', id: null, label: 'operator' }, 'the workspace was made by the operator');
  });

  test('last_used_at is recorded once the key is used', async () => {
    const ws = await ctx.createWorkspace('scoped-used');
    const { ws: used, id } = await keyFor(ws, { name: 'used' });
    const before = json<'listApiKeys'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`)).api_keys;
    assert.equal(before.find((k) => k.id === id)!.last_used_at, null);
    assert.equal((await ctx.api(used, 'GET', '/users')).statusCode, 200);
    let lastUsed: string | null = null;
    for (let i = 0; i < 50 && !lastUsed; i += 1) {
      await sleep(20);
      lastUsed = json<'listApiKeys'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`)).api_keys.find((k) => k.id === id)!.last_used_at;
    }
    assert.ok(lastUsed, 'recorded');
  });
});
