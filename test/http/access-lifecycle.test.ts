import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createLifecycleSweeper, type LifecycleSweeper } from '../../src/lifecycle/sweeper.ts';
import { ADMIN_TOKEN, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, userData } from '../helpers/json.ts';

/*
 * Access that ends on time (docs/contract.md Part B): the fields, filters, activity reports and
 * policies through the API, and the scheduler's changes with an injected clock.
 */

const silent = { info: () => {}, warn: () => {}, error: () => {} };
const HOUR = 3_600_000;
const inHours = (hours: number) => new Date(Date.now() + hours * HOUR).toISOString();

describe(`access that ends on time [${BACKEND}]`, () => {
  let ctx: TestContext;
  let clock = new Date();
  let sweeper: LifecycleSweeper;

  before(async () => {
    ctx = await createTestContext({ POLICY_MIN_DURATION: 'PT1S' });
    await ctx.seedProducts();
    sweeper = createLifecycleSweeper({ store: ctx.store, log: silent, now: () => clock });
  });
  after(() => ctx.close());

  async function add(ws: TestWorkspace, email: string, user: Record<string, unknown> = {}) {
    const res = await ctx.api(ws, 'POST', '/users', { body: userBody(email, user) });
    assert.equal(res.statusCode, 201, res.body);
    return json<'addUser'>(res);
  }
  async function get(ws: TestWorkspace, email: string) {
    const res = await ctx.api(ws, 'GET', `/users/${encodeURIComponent(email)}`);
    assert.equal(res.statusCode, 200, res.body);
    return json<'getUser'>(res);
  }
  async function events(ws: TestWorkspace) {
    const res = await ctx.api(ws, 'GET', '/events', { query: { limit: '1000' } });
    assert.equal(res.statusCode, 200, res.body);
    // Every event of these workspaces is a user's (none has an audit stream).
    return json<'listEvents'>(res).events.map((e) => ({ type: e.type, actor: e.actor, data: userData(e) }));
  }
  async function policyAudit(ws: TestWorkspace) {
    const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?actor_type=policy&page_size=100`);
    assert.equal(res.statusCode, 200, res.body);
    return json<'listWorkspaceAuditEvents'>(res).audit_events;
  }
  /** Sweeps with the clock at `at`. */
  async function sweepAt(at: string | Date) {
    clock = new Date(at);
    return sweeper.sweep();
  }

  test('expires_at is set on creation, shown, changed and cleared by PATCH; past or now → 422 and nothing stored', async () => {
    const ws = await ctx.createWorkspace();
    const ends = inHours(24);
    const created = await add(ws, 'temp@example.com', { expires_at: ends });
    assert.equal(created.expires_at, new Date(ends).toISOString());
    assert.equal(created.last_active_at, null);

    const past = await ctx.api(ws, 'POST', '/users', { body: userBody('late@example.com', { expires_at: inHours(-1) }) });
    assert.equal(past.statusCode, 422);
    assert.equal(json<'Problem'>(past).code, 'expires_at_not_in_future');
    assert.equal((await ctx.api(ws, 'GET', '/users/late@example.com')).statusCode, 404);

    const now = await ctx.api(ws, 'PATCH', '/users/temp@example.com', { body: { user: { expires_at: new Date().toISOString() } } });
    assert.equal(now.statusCode, 422);
    assert.equal(json<'Problem'>(now).code, 'expires_at_not_in_future');
    assert.equal((await get(ws, 'temp@example.com')).expires_at, new Date(ends).toISOString());

    const later = inHours(48);
    const patched = await ctx.api(ws, 'PATCH', '/users/temp@example.com', { body: { user: { expires_at: later } } });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(json<'updateUser'>(patched).expires_at, new Date(later).toISOString());
    const cleared = await ctx.api(ws, 'PATCH', '/users/temp@example.com', { body: { user: { expires_at: null } } });
    assert.equal(json<'updateUser'>(cleared).expires_at, null);

    const grant = await ctx.api(ws, 'POST', '/users', {
      body: userBody('grant@example.com', { apps: [{ name: 'crm', role: 'admin', expires_at: inHours(-2) }] }),
    });
    assert.equal(grant.statusCode, 422);
    assert.equal(json<'Problem'>(grant).errors![0]!.field, 'user.apps[0].expires_at');
  });

  test('GET /users: expires_before and inactive_since filter, sort=expires_at orders (never-expiring last), items carry the fields', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'never@example.com');
    await add(ws, 'late@example.com', { expires_at: inHours(72) });
    await add(ws, 'soon@example.com', { expires_at: inHours(2), apps: [{ name: 'crm', role: 'admin', expires_at: inHours(1) }] });
    const soon = await ctx.api(ws, 'GET', '/users', { query: { expires_before: inHours(24) } });
    assert.deepEqual(json<'listUsers'>(soon).users.map((u) => u.email), ['soon@example.com']);
    assert.equal(json<'listUsers'>(soon).users[0]!.apps[0]!.expires_at!.length, 24);
    const sorted = await ctx.api(ws, 'GET', '/users', { query: { sort: 'expires_at' } });
    assert.deepEqual(json<'listUsers'>(sorted).users.map((u) => u.email), ['soon@example.com', 'late@example.com', 'never@example.com']);
    const reversed = await ctx.api(ws, 'GET', '/users', { query: { sort: '-expires_at' } });
    assert.deepEqual(json<'listUsers'>(reversed).users.map((u) => u.email), ['late@example.com', 'soon@example.com', 'never@example.com']);

    const reported = await ctx.api(ws, 'POST', '/users/activity', { body: { activity: [{ email: 'never@example.com', at: inHours(1) }] } });
    assert.equal(reported.statusCode, 200, reported.body);
    const inactive = await ctx.api(ws, 'GET', '/users', { query: { inactive_since: inHours(0.5) } });
    assert.deepEqual(json<'listUsers'>(inactive).users.map((u) => u.email).sort(), ['late@example.com', 'soon@example.com']);
  });

  test('POST /users/activity: moves last_active_at forward only, reports unknown emails, needs activity:write and nothing else', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'ada@example.com');
    const t1 = '2026-01-10T10:00:00.000Z';
    const t0 = '2026-01-01T10:00:00.000Z';
    const first = await ctx.api(ws, 'POST', '/users/activity', {
      body: { activity: [{ email: 'ADA@example.com', at: t1 }, { email: 'ghost@example.com', at: t1 }] },
    });
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(json<'reportActivity'>(first), { updated: 1, unchanged: 0, unknown: ['ghost@example.com'] });
    assert.equal((await get(ws, 'ada@example.com')).last_active_at, t1);
    const older = await ctx.api(ws, 'POST', '/users/activity', { body: { activity: [{ email: 'ada@example.com', at: t0 }] } });
    assert.deepEqual(json<'reportActivity'>(older), { updated: 0, unchanged: 1, unknown: [] });
    assert.equal((await get(ws, 'ada@example.com')).last_active_at, t1);

    const tooMany = Array.from({ length: 1001 }, (_, i) => ({ email: `u${i}@example.com`, at: t1 }));
    assert.equal((await ctx.api(ws, 'POST', '/users/activity', { body: { activity: tooMany } })).statusCode, 400);

    const key = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, { name: 'reporter', scopes: ['activity:write'] });
    assert.equal(key.statusCode, 201, key.body);
    const reporter = { ...ws, apiKey: json<'createApiKey'>(key).key };
    assert.equal((await ctx.api(reporter, 'POST', '/users/activity', { body: { activity: [{ email: 'ada@example.com', at: t1 }] } })).statusCode, 200);
    const refused = await ctx.api(reporter, 'POST', '/users', { body: userBody('new@example.com') });
    assert.equal(refused.statusCode, 403);
    assert.equal(json<'Problem'>(refused).code, 'insufficient_scope');
    const policy = await ctx.api(reporter, 'PUT', '/policies/expiry', { body: { warn_before: 'P7D' } });
    assert.equal(policy.statusCode, 403);
  });

  test('policies: PUT answers as written, GET reads it back, DELETE removes it; too short → 422 invalid_duration; each change audited', async () => {
    const ws = await ctx.createWorkspace();
    assert.equal(json<'Problem'>(await ctx.api(ws, 'GET', '/policies/inactivity')).code, 'policy_not_found');
    const body = { deactivate_after: 'P90D', applies_to: 'all', warn_before: 'P7D' };
    const put = await ctx.api(ws, 'PUT', '/policies/inactivity', { body });
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual(json<'putInactivityPolicy'>(put), body);
    assert.deepEqual(json<'getInactivityPolicy'>(await ctx.api(ws, 'GET', '/policies/inactivity')), body);
    assert.equal((await ctx.api(ws, 'DELETE', '/policies/inactivity')).statusCode, 204);
    assert.equal((await ctx.api(ws, 'GET', '/policies/inactivity')).statusCode, 404);
    assert.equal((await ctx.api(ws, 'DELETE', '/policies/inactivity')).statusCode, 404);

    const short = await ctx.api(ws, 'PUT', '/policies/inactivity', { body: { deactivate_after: 'PT0.5S', applies_to: 'all' } });
    assert.equal(short.statusCode, 422);
    assert.equal(json<'Problem'>(short).code, 'invalid_duration');
    const months = await ctx.api(ws, 'PUT', '/policies/inactivity', { body: { deactivate_after: 'P3M', applies_to: 'all' } });
    assert.equal(json<'Problem'>(months).code, 'invalid_duration');

    assert.deepEqual(json<'getExpiryPolicy'>(await ctx.api(ws, 'GET', '/policies/expiry')), { warn_before: null });
    assert.deepEqual(json<'putExpiryPolicy'>(await ctx.api(ws, 'PUT', '/policies/expiry', { body: { warn_before: 'P7D' } })), { warn_before: 'P7D' });
    assert.deepEqual(json<'getExpiryPolicy'>(await ctx.api(ws, 'GET', '/policies/expiry')), { warn_before: 'P7D' });

    // Each change is evidence: who set which policy to what (refused writes leave no row).
    const trail = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`);
    const rows = json<'listWorkspaceAuditEvents'>(trail).audit_events
      .filter((row) => row.target_type === 'policy')
      .map(({ action, target_id, actor, before, after }) => ({ action, target_id, actor: actor.type, before, after }));
    assert.deepEqual(rows, [
      { action: 'inactivity_policy.set', target_id: 'inactivity', actor: 'api_key', before: null, after: body },
      { action: 'inactivity_policy.removed', target_id: 'inactivity', actor: 'api_key', before: body, after: null },
      { action: 'expiry_policy.set', target_id: 'expiry', actor: 'api_key', before: { warn_before: null }, after: { warn_before: 'P7D' } },
    ]);
  });

  test('expiry deactivates as DELETE does, once, with the policy as actor and reason expired; reactivation clears the past expires_at', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'boss@example.com', { role: 'owner' });
    const ends = inHours(1);
    await add(ws, 'temp@example.com', { expires_at: ends });
    await sweepAt(inHours(0.5));
    assert.equal((await get(ws, 'temp@example.com')).status, 'active');

    await sweepAt(inHours(1.5));
    const user = await get(ws, 'temp@example.com');
    assert.equal(user.status, 'deactivated');
    assert.equal(user.expires_at, new Date(ends).toISOString());
    await sweepAt(inHours(2));
    const deactivated = (await events(ws)).filter((e) => e.type === 'user.deactivated');
    assert.equal(deactivated.length, 1);
    assert.deepEqual(deactivated[0]!.actor, { type: 'policy', id: 'expiry', label: 'expiry policy' });
    assert.equal(deactivated[0]!.data.reason, 'expired');
    assert.equal(deactivated[0]!.data.user.status, 'deactivated');
    const audit = await policyAudit(ws);
    assert.deepEqual(audit.map((a) => [a.action, a.actor.id, a.target_id]), [['user.deactivated', 'expiry', 'temp@example.com']]);

    // The reactivation itself runs on the real clock: a user whose expiry has really passed.
    await add(ws, 'brief@example.com', { expires_at: new Date(Date.now() + 1500).toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await sweepAt(new Date());
    assert.equal((await get(ws, 'brief@example.com')).status, 'deactivated');
    const back = await ctx.api(ws, 'POST', '/users', { body: userBody('brief@example.com') });
    assert.equal(back.statusCode, 201, back.body);
    assert.equal(json<'addUser'>(back).status, 'active');
    assert.equal(json<'addUser'>(back).expires_at, null);
    const patchedBack = await ctx.api(ws, 'PATCH', '/users/temp@example.com', { body: { user: { status: 'active' } } });
    assert.equal(json<'updateUser'>(patchedBack).expires_at, new Date(ends).toISOString(), 'an expiry still ahead is kept on reactivation');
  });

  test('a grant past its expires_at is removed, the user stays active: one user.updated with previous.apps and reason grant_expired', async () => {
    const ws = await ctx.createWorkspace();
    const ends = inHours(1);
    await add(ws, 'ada@example.com', {
      apps: [{ name: 'crm', role: 'admin', expires_at: ends }, { name: 'analytics', role: 'viewer', expires_at: ends }, { name: 'crm', role: 'member' }],
    });
    await sweepAt(inHours(1.5));
    const user = await get(ws, 'ada@example.com');
    assert.equal(user.status, 'active');
    assert.deepEqual(user.apps, [{ name: 'crm', role: 'member' }]);
    const updated = (await events(ws)).filter((e) => e.type === 'user.updated');
    assert.equal(updated.length, 1);
    assert.equal(updated[0]!.data.reason, 'grant_expired');
    assert.deepEqual(updated[0]!.actor.id, 'grant_expiry');
    assert.equal((updated[0]!.data.previous!.apps as unknown[]).length, 3);
    assert.equal((await policyAudit(ws)).length, 1);
  });

  test('the last active owner is not expired away: deferred once (audit and user.expiry_deferred), done once another owner exists', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'olivia@example.com', { role: 'owner', expires_at: inHours(1) });
    await add(ws, 'temp@example.com', { expires_at: inHours(1) });
    await sweepAt(inHours(2));
    await sweepAt(inHours(3));
    assert.equal((await get(ws, 'olivia@example.com')).status, 'active');
    assert.equal((await get(ws, 'temp@example.com')).status, 'deactivated');
    const deferred = (await events(ws)).filter((e) => e.type === 'user.expiry_deferred');
    assert.equal(deferred.length, 1);
    assert.equal(deferred[0]!.data.user.email, 'olivia@example.com');
    assert.equal(deferred[0]!.data.reason, 'expired');

    await add(ws, 'second@example.com', { role: 'owner' });
    await sweepAt(inHours(4));
    assert.equal((await get(ws, 'olivia@example.com')).status, 'deactivated');
    const actions = (await policyAudit(ws)).map((a) => `${a.action} ${a.target_id}`);
    assert.deepEqual(actions.sort(), ['user.deactivated olivia@example.com', 'user.deactivated temp@example.com', 'user.expiry_deferred olivia@example.com']);
  });

  test('inactivity: users not seen for deactivate_after are deactivated (reason inactive), owners spared under non_owners; warnings once per due date', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'boss@example.com', { role: 'owner' });
    await add(ws, 'idle@example.com');
    await add(ws, 'busy@example.com');
    assert.equal((await ctx.api(ws, 'PUT', '/policies/inactivity', { body: { deactivate_after: 'P30D', applies_to: 'non_owners', warn_before: 'P7D' } })).statusCode, 200);
    const day = 24 * HOUR;
    await sweepAt(new Date(Date.now() + 20 * day));
    assert.equal((await events(ws)).filter((e) => e.type === 'user.access_expiring').length, 0);
    const report = await ctx.api(ws, 'POST', '/users/activity', { body: { activity: [{ email: 'busy@example.com', at: new Date(Date.now() + 20 * day).toISOString() }] } });
    assert.equal(report.statusCode, 200);

    await sweepAt(new Date(Date.now() + 25 * day));
    await sweepAt(new Date(Date.now() + 26 * day));
    const warnings = (await events(ws)).filter((e) => e.type === 'user.access_expiring');
    assert.deepEqual(warnings.map((w) => [w.data.user.email, w.data.reason]), [['idle@example.com', 'inactive']]);
    assert.ok(Date.parse(warnings[0]!.data.ends_at!) > Date.now() + 29 * day);

    await sweepAt(new Date(Date.now() + 31 * day));
    assert.equal((await get(ws, 'idle@example.com')).status, 'deactivated');
    assert.equal((await get(ws, 'busy@example.com')).status, 'active');
    assert.equal((await get(ws, 'boss@example.com')).status, 'active');
    const deactivated = (await events(ws)).filter((e) => e.type === 'user.deactivated');
    assert.deepEqual(deactivated.map((e) => [e.data.user.email, e.actor.id, e.data.reason]), [['idle@example.com', 'inactivity', 'inactive']]);
  });

  test('expiry warnings: one user.access_expiring per user and due date, re-armed when the date changes', async () => {
    const ws = await ctx.createWorkspace();
    assert.equal((await ctx.api(ws, 'PUT', '/policies/expiry', { body: { warn_before: 'P1D' } })).statusCode, 200);
    const first = inHours(48);
    await add(ws, 'temp@example.com', { expires_at: first });
    await sweepAt(inHours(12));
    await sweepAt(inHours(30));
    await sweepAt(inHours(31));
    let warnings = (await events(ws)).filter((e) => e.type === 'user.access_expiring');
    assert.deepEqual(warnings.map((w) => [w.data.ends_at, w.data.reason, w.actor.id]), [[new Date(first).toISOString(), 'expired', 'expiry']]);

    const second = inHours(60);
    assert.equal((await ctx.api(ws, 'PATCH', '/users/temp@example.com', { body: { user: { expires_at: second } } })).statusCode, 200);
    await sweepAt(inHours(40));
    await sweepAt(inHours(45));
    warnings = (await events(ws)).filter((e) => e.type === 'user.access_expiring');
    assert.deepEqual(warnings.map((w) => w.data.ends_at), [new Date(first).toISOString(), new Date(second).toISOString()]);
  });

  test('policy is an audit actor type, and the new event types can be subscribed to', async () => {
    const ws = await ctx.createWorkspace();
    const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?actor_type=policy`);
    assert.equal(res.statusCode, 200, res.body);
    const app = await ctx.buildApp({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' });
    const endpoint = await app.inject({
      method: 'POST',
      url: `/admin/v1/workspaces/${ws.subdomain}/webhook-endpoints`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { url: 'http://127.0.0.1:9/hook', event_types: ['user.access_expiring', 'user.expiry_deferred'] },
    });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
  });
});
