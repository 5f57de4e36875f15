import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { startOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-provider.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/**
 * An owner's self-service on the workspace's host: API keys, identity provider, webhook
 * endpoints and audit trail, each behind its scope; no key ever holds more than its creator;
 * the operator gets the workspace's policies. Source: docs/api.md, "Self-service";
 * docs/security.md, "Self-service".
 */
describe(`self-service on the workspace host [${BACKEND}]`, () => {
  let ctx: TestContext;
  let op: TestOpenIdProvider;

  before(async () => {
    // The test provider and webhook URLs are plain http on loopback, allowed only with WEBHOOK_ALLOW_HTTP.
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true', RATE_LIMIT_PER_KEY: '0' });
    await ctx.seedProducts();
    op = await startOpenIdProvider(['http://idp.localhost/console/oidc/callback']);
  });
  after(async () => {
    await op?.close();
    await ctx?.close();
  });

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, code, res.body);
  }

  /** A key of `ws` with `scopes`, made by the workspace's first key (of every scope) on its own host. */
  async function keyOf(ws: TestWorkspace, ...scopes: string[]): Promise<TestWorkspace> {
    const res = await ctx.api(ws, 'POST', '/api-keys', { body: { name: `with ${scopes.join(' ')}`, scopes } });
    assert.equal(res.statusCode, 201, res.body);
    return { ...ws, apiKey: json<'createOwnApiKey'>(res).key, apiKeyId: json<'createOwnApiKey'>(res).id };
  }

  test('keys: create, list and revoke with keys:write; scopes are required; the creator is the actor', async () => {
    const ws = await ctx.createWorkspace('self-keys');
    const created = await ctx.api(ws, 'POST', '/api-keys', { body: { name: 'okta-scim', scopes: ['scim'], expires_at: '2099-01-01T00:00:00Z' } });
    assert.equal(created.statusCode, 201, created.body);
    const key = json<'createOwnApiKey'>(created);
    assert.deepEqual(key.scopes, ['scim']);
    assert.equal(key.expires_at, '2099-01-01T00:00:00.000Z');
    assert.match(key.key, /^wum_/);
    assert.equal(key.created_by?.type, 'api_key');
    assert.equal(key.created_by.id, ws.apiKeyId);

    // The SCIM key works where it should, and the list shows it without its secret.
    const scim = await ctx.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: { host: ws.host, authorization: `Bearer ${key.key}` } });
    assert.equal(scim.statusCode, 200, scim.body);
    const list = await ctx.api(ws, 'GET', '/api-keys');
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual(json<'listOwnApiKeys'>(list).api_keys.map((k: { id: string }) => k.id), [ws.apiKeyId, key.id]);
    assert.ok(!list.body.includes(key.key), 'never the plaintext');

    for (const body of [{ name: 'no scopes' }, {}, { scopes: [] }, { scopes: ['nope'] }]) {
      assertProblem(await ctx.api(ws, 'POST', '/api-keys', { body }), 400, 'validation_failed');
    }

    assert.equal((await ctx.api(ws, 'DELETE', `/api-keys/${key.id}`)).statusCode, 204);
    assert.equal((await ctx.api(ws, 'DELETE', `/api-keys/${key.id}`)).statusCode, 204, 'idempotent');
    assertProblem(await ctx.api(ws, 'DELETE', '/api-keys/00000000-0000-4000-8000-000000000000'), 404, 'api_key_not_found');
    const revoked = await ctx.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: { host: ws.host, authorization: `Bearer ${key.key}` } });
    assert.equal(revoked.statusCode, 401);

    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?target_id=${key.id}`);
    assert.deepEqual(
      json<'listWorkspaceAuditEvents'>(audit).audit_events.map((e: { action: string; actor: { type: string; id: string | null } }) => [e.action, e.actor.type, e.actor.id]),
      [
        ['api_key.created', 'api_key', ws.apiKeyId],
        ['api_key.revoked', 'api_key', ws.apiKeyId],
      ],
    );

    // Another workspace's key is not found from here, and stays live.
    const other = await ctx.createWorkspace('self-keys-other');
    assertProblem(await ctx.api(ws, 'DELETE', `/api-keys/${other.apiKeyId}`), 404, 'api_key_not_found');
    assert.equal((await ctx.api(other, 'GET', '/api-keys')).statusCode, 200);

    // The operator's route keeps its default: no scopes is every scope.
    const operator = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, { name: 'operator-made' });
    assert.equal(operator.statusCode, 201, operator.body);
    assert.deepEqual(json<'createApiKey'>(operator).scopes, ['*']);
  });

  test('keys: never a scope the creator lacks; a keys:write key cannot mint a * key nor revoke a wider key', async () => {
    const ws = await ctx.createWorkspace('self-least');
    const keysOnly = await keyOf(ws, 'keys:write');
    const wide = await keyOf(ws, 'users:read', 'scim');

    const scim = await ctx.api(keysOnly, 'POST', '/api-keys', { body: { scopes: ['scim'] } });
    assertProblem(scim, 403, 'insufficient_scope');
    assert.match(json<'Problem'>(scim).detail, /scim/);
    const every = await ctx.api(keysOnly, 'POST', '/api-keys', { body: { scopes: ['*'] } });
    assertProblem(every, 403, 'insufficient_scope');
    assert.match(json<'Problem'>(every).detail, /users:read/, 'names what it lacks');
    const mixed = await ctx.api(keysOnly, 'POST', '/api-keys', { body: { scopes: ['keys:write', 'users:write', 'audit:read'] } });
    assertProblem(mixed, 403, 'insufficient_scope');
    assert.match(json<'Problem'>(mixed).detail, /users:write, audit:read/);
    assert.doesNotMatch(json<'Problem'>(mixed).detail, /keys:write/);

    // Its own scopes it may hand on, and revoke keys that hold no more.
    const same = await ctx.api(keysOnly, 'POST', '/api-keys', { body: { name: 'another', scopes: ['keys:write'] } });
    assert.equal(same.statusCode, 201, same.body);
    assertProblem(await ctx.api(keysOnly, 'DELETE', `/api-keys/${wide.apiKeyId}`), 403, 'insufficient_scope');
    assertProblem(await ctx.api(keysOnly, 'DELETE', `/api-keys/${ws.apiKeyId}`), 403, 'insufficient_scope');
    assert.equal((await ctx.api(keysOnly, 'DELETE', `/api-keys/${json<'createOwnApiKey'>(same).id}`)).statusCode, 204);

    // Nothing refused was made or revoked.
    const keys = json<'listOwnApiKeys'>(await ctx.api(ws, 'GET', '/api-keys')).api_keys as Array<{ id: string; revoked_at: string | null }>;
    assert.equal(keys.length, 4);
    assert.deepEqual(keys.filter((k) => k.revoked_at !== null).map((k) => k.id), [json<'createOwnApiKey'>(same).id]);
    assert.equal((await ctx.api(wide, 'GET', '/users')).statusCode, 200, 'the wider key still works');

    // A credential of every scope may make a key of every scope.
    const all = await ctx.api(ws, 'POST', '/api-keys', { body: { scopes: ['*'] } });
    assert.equal(all.statusCode, 201, all.body);
    assert.deepEqual(json<'createOwnApiKey'>(all).scopes, ['*']);

    // Without keys:write the keys are out of reach, listing included.
    for (const [method, path] of [['GET', '/api-keys'], ['POST', '/api-keys'], ['DELETE', `/api-keys/${ws.apiKeyId}`]] as const) {
      const res = await ctx.api(wide, method, path, method === 'POST' ? { body: { scopes: ['users:read'] } } : {});
      assertProblem(res, 403, 'insufficient_scope');
      assert.match(json<'Problem'>(res).detail, /keys:write/);
    }
  });

  test('audit trail: the workspace\'s own rows, newest first by default, `sort` flips it, filters by actor type', async () => {
    const ws = await ctx.createWorkspace('self-audit');
    const other = await ctx.createWorkspace('self-audit-other');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('ada@example.com') })).statusCode, 201);
    assert.equal((await ctx.api(other, 'POST', '/users', { body: userBody('other@example.com') })).statusCode, 201);
    const workspace = await ctx.store.workspaces.findBySubdomain(ws.subdomain);
    await ctx.store.audit.append({
      workspaceId: workspace!.id,
      actor: { type: 'person', id: 'user-1', label: 'owner@example.com', requestId: null },
      action: 'webhook_endpoint.created',
      targetType: 'webhook_endpoint',
      targetId: 'endpoint-1',
      before: null,
      after: {},
    });
    const reader = await keyOf(ws, 'audit:read');

    const newest = await ctx.api(reader, 'GET', '/audit-events');
    assert.equal(newest.statusCode, 200, newest.body);
    const events = json<'listOwnAuditEvents'>(newest).audit_events as Array<{ id: number; actor_type: string; target_id: string }>;
    const ids = events.map((e) => e.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => b - a), 'newest first');
    assert.equal(events[0]!.target_id, reader.apiKeyId, 'the key just made is the newest');
    assert.ok(!newest.body.includes('other@example.com'), 'only the workspace\'s own rows');
    assert.ok(!newest.body.includes(other.subdomain));
    assert.equal(json<'listOwnAuditEvents'>(newest).total_count, events.length);

    const oldest = await ctx.api(reader, 'GET', '/audit-events', { query: { sort: 'occurred_at' } });
    assert.deepEqual(json<'listOwnAuditEvents'>(oldest).audit_events.map((e: { id: number }) => e.id), [...ids].reverse());
    assert.deepEqual(json<'listOwnAuditEvents'>(await ctx.api(reader, 'GET', '/audit-events', { query: { sort: '-occurred_at' } })).audit_events.map((e: { id: number }) => e.id), ids);
    assertProblem(await ctx.api(reader, 'GET', '/audit-events', { query: { sort: 'id' } }), 400, 'invalid_parameter');

    const byType = async (actorType: string) =>
      json<'listOwnAuditEvents'>(await ctx.api(reader, 'GET', '/audit-events', { query: { actor_type: actorType } })).audit_events as Array<{ actor_type: string; action: string }>;
    const people = await byType('person');
    assert.deepEqual(people.map((e) => [e.actor_type, e.action]), [['person', 'webhook_endpoint.created']]);
    const operator = await byType('operator');
    assert.ok(operator.length >= 2, 'the workspace and its first key, made by the operator');
    assert.ok(operator.every((e) => e.actor_type === 'operator'));
    assert.deepEqual((await byType('api_key')).map((e) => e.action).sort(), ['api_key.created', 'user.created']);
    const byAction = await ctx.api(reader, 'GET', '/audit-events', { query: { action: 'user.created', target_id: 'ada@example.com' } });
    assert.equal(json<'listOwnAuditEvents'>(byAction).audit_events.length, 1);
    assertProblem(await ctx.api(reader, 'GET', '/audit-events', { query: { actor_type: 'admin' } }), 400, 'invalid_parameter');

    // The operator's listing keeps oldest first by default and takes the same `sort`.
    const operatorOldest = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`);
    assert.deepEqual(json<'listWorkspaceAuditEvents'>(operatorOldest).audit_events.map((e: { id: number }) => e.id), [...ids].reverse());
    const operatorNewest = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?sort=-occurred_at`);
    assert.deepEqual(json<'listWorkspaceAuditEvents'>(operatorNewest).audit_events.map((e: { id: number }) => e.id), ids);
    const global = json<'listAuditEvents'>(await ctx.admin('GET', `/audit-events?sort=-occurred_at&page_size=5`)).audit_events.map((e: { id: number }) => e.id);
    assert.deepEqual(global, [...global].sort((a: number, b: number) => b - a));

    assertProblem(await ctx.api(await keyOf(ws, 'users:read'), 'GET', '/audit-events'), 403, 'insufficient_scope');
  });

  test('identity provider: set (its discovery tested), show with the redirect path, test, remove, with sso:write', async () => {
    const ws = await ctx.createWorkspace('self-idp');
    const sso = await keyOf(ws, 'sso:write');
    const config = { issuer: op.issuer, client_id: 'wum-console', client_secret: 'very-secret-value' };
    assertProblem(await ctx.api(sso, 'GET', '/identity-provider'), 404, 'identity_provider_not_found');
    assertProblem(await ctx.api(sso, 'POST', '/identity-provider/test'), 404, 'identity_provider_not_found');

    const set = await ctx.api(sso, 'PUT', '/identity-provider', { body: config });
    assert.equal(set.statusCode, 201, set.body);
    assert.equal(json<'setOwnIdentityProvider'>(set).redirect_path, '/console/oidc/callback');
    assert.ok(!set.body.includes(config.client_secret));
    const shown = await ctx.api(sso, 'GET', '/identity-provider');
    assert.equal(shown.statusCode, 200);
    assert.equal(json<'getOwnIdentityProvider'>(shown).issuer, op.issuer);
    const tested = await ctx.api(sso, 'POST', '/identity-provider/test');
    assert.equal(tested.statusCode, 200, tested.body);
    assert.equal(json<'testOwnIdentityProvider'>(tested).revision, json<'setOwnIdentityProvider'>(set).revision, 'a test changes nothing');

    const unreachable = await ctx.api(sso, 'PUT', '/identity-provider', { body: { ...config, issuer: 'http://127.0.0.1:1/nothing' } });
    assertProblem(unreachable, 422, 'identity_provider_unreachable');
    assert.equal(json<'getOwnIdentityProvider'>(await ctx.api(sso, 'GET', '/identity-provider')).issuer, op.issuer, 'nothing stored');

    assert.equal((await ctx.api(sso, 'DELETE', '/identity-provider')).statusCode, 204);
    assertProblem(await ctx.api(sso, 'DELETE', '/identity-provider'), 404, 'identity_provider_not_found');
    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?target_id=${ws.subdomain}&sort=-occurred_at`);
    const changes = json<'listWorkspaceAuditEvents'>(audit).audit_events.filter((e: { action: string }) => e.action.startsWith('identity_provider.'));
    assert.deepEqual(
      changes.map((e: { action: string; actor: { id: string | null } }) => [e.action, e.actor.id]),
      [
        ['identity_provider.removed', sso.apiKeyId],
        ['identity_provider.set', sso.apiKeyId],
      ],
    );

    const other = await keyOf(ws, 'users:write', 'webhooks:write');
    for (const [method, path] of [['GET', '/identity-provider'], ['PUT', '/identity-provider'], ['DELETE', '/identity-provider'], ['POST', '/identity-provider/test']] as const) {
      assertProblem(await ctx.api(other, method, path, method === 'PUT' ? { body: config } : {}), 403, 'insufficient_scope');
    }
  });

  test('webhook endpoints: create, rotate, disable, redeliver, delete with webhooks:write', async () => {
    const ws = await ctx.createWorkspace('self-hooks');
    const hooks = await keyOf(ws, 'webhooks:write');
    const created = await ctx.api(hooks, 'POST', '/webhook-endpoints', { body: { url: 'http://127.0.0.1:9/hook', description: 'test' } });
    assert.equal(created.statusCode, 201, created.body);
    const endpoint = json<'createOwnWebhookEndpoint'>(created);
    assert.match(endpoint.secret, /^whsec_/);
    const path = `/webhook-endpoints/${endpoint.id}`;

    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('hooked@example.com') })).statusCode, 201);
    const deliveries = await ctx.api(hooks, 'GET', `${path}/deliveries`);
    assert.equal(deliveries.statusCode, 200, deliveries.body);
    const [delivery] = json<'listOwnWebhookDeliveries'>(deliveries).deliveries as Array<{ id: string }>;
    assert.ok(delivery, 'the user change was queued for the endpoint');
    const redelivered = await ctx.api(hooks, 'POST', `${path}/deliveries/${delivery.id}/redeliver`);
    assert.equal(redelivered.statusCode, 202, redelivered.body);
    assert.equal(json<'redeliverOwnWebhook'>(redelivered).status, 'pending');

    const rotated = await ctx.api(hooks, 'POST', `${path}/rotate-secret`);
    assert.equal(rotated.statusCode, 200, rotated.body);
    assert.notEqual(json<'rotateOwnWebhookSecret'>(rotated).secret, endpoint.secret);
    assert.ok(json<'rotateOwnWebhookSecret'>(rotated).previous_secret_expires_at);

    const disabled = await ctx.api(hooks, 'PATCH', path, { body: { enabled: false } });
    assert.equal(disabled.statusCode, 200, disabled.body);
    assert.equal(json<'updateOwnWebhookEndpoint'>(disabled).enabled, false);
    assertProblem(await ctx.api(hooks, 'POST', `${path}/deliveries/${delivery.id}/redeliver`), 409, 'webhook_endpoint_disabled');
    assert.equal(json<'listOwnWebhookEndpoints'>(await ctx.api(hooks, 'GET', '/webhook-endpoints')).webhook_endpoints.length, 1);
    assert.equal(json<'getOwnWebhookEndpoint'>(await ctx.api(hooks, 'GET', path)).enabled, false);
    assert.equal((await ctx.api(hooks, 'DELETE', path)).statusCode, 204);
    assertProblem(await ctx.api(hooks, 'GET', path), 404, 'webhook_endpoint_not_found');

    // Another workspace's endpoint is not found from here.
    const other = await ctx.createWorkspace('self-hooks-other');
    const foreign = await ctx.admin('POST', `/workspaces/${other.subdomain}/webhook-endpoints`, { url: 'http://127.0.0.1:9/hook' });
    assertProblem(await ctx.api(hooks, 'GET', `/webhook-endpoints/${json<'getOwnWebhookEndpoint'>(foreign).id}`), 404, 'webhook_endpoint_not_found');

    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?actor_type=api_key`);
    const actions = json<'listWorkspaceAuditEvents'>(audit).audit_events.filter((e: { actor: { id: string | null } }) => e.actor.id === hooks.apiKeyId).map((e: { action: string }) => e.action);
    assert.deepEqual(actions, [
      'webhook_endpoint.created',
      'webhook_delivery.redelivered',
      'webhook_endpoint.secret_rotated',
      'webhook_endpoint.updated',
      'webhook_endpoint.deleted',
    ]);

    const reader = await keyOf(ws, 'users:read');
    for (const [method, p] of [['GET', '/webhook-endpoints'], ['POST', '/webhook-endpoints'], ['POST', `${path}/rotate-secret`]] as const) {
      assertProblem(await ctx.api(reader, method, p, method === 'POST' && p === '/webhook-endpoints' ? { body: { url: 'http://127.0.0.1:9/x' } } : {}), 403, 'insufficient_scope');
    }
  });

  test('the operator sets, reads and removes a workspace\'s access policies; the workspace sees them', async () => {
    const ws = await ctx.createWorkspace('self-policies');
    const base = `/workspaces/${ws.subdomain}/policies`;
    assertProblem(await ctx.admin('GET', `${base}/inactivity`), 404, 'policy_not_found');
    const body = { deactivate_after: 'P90D', applies_to: 'non_owners', warn_before: 'P7D' };
    const put = await ctx.admin('PUT', `${base}/inactivity`, body);
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual(put.json(), body);
    assert.deepEqual((await ctx.admin('GET', `${base}/inactivity`)).json(), body);
    assert.deepEqual(json<'getInactivityPolicy'>(await ctx.api(ws, 'GET', '/policies/inactivity')), body, 'the workspace sees what the operator set');
    assertProblem(await ctx.admin('PUT', `${base}/inactivity`, { deactivate_after: 'PT1S', applies_to: 'all' }), 422, 'invalid_duration');
    assert.equal((await ctx.admin('DELETE', `${base}/inactivity`)).statusCode, 204);
    assertProblem(await ctx.api(ws, 'GET', '/policies/inactivity'), 404, 'policy_not_found');

    assert.deepEqual((await ctx.admin('GET', `${base}/expiry`)).json(), { warn_before: null });
    const expiry = await ctx.admin('PUT', `${base}/expiry`, { warn_before: 'P14D' });
    assert.equal(expiry.statusCode, 200, expiry.body);
    assert.deepEqual(json<'getExpiryPolicy'>(await ctx.api(ws, 'GET', '/policies/expiry')), { warn_before: 'P14D' });

    assertProblem(await ctx.admin('GET', '/workspaces/no-such-ws/policies/expiry'), 404, 'workspace_not_found');
    const refused = await ctx.app.inject({ method: 'GET', url: `/admin/v1${base}/expiry`, headers: { authorization: 'Bearer wrong' } });
    assert.equal(refused.statusCode, 401);
    // On a workspace's host the operator's routes do not exist.
    const onWorkspaceHost = await ctx.app.inject({ method: 'GET', url: `/admin/v1${base}/expiry`, headers: { host: ws.host, authorization: `Bearer ${'x'}` } });
    assert.equal(onWorkspaceHost.statusCode, 404);
  });
});
