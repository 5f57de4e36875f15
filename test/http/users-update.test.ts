import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type Body } from '../helpers/json.ts';
import type { AuditEventOf } from '../helpers/audit-types.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A user's audit row: its snapshots are the user as the API shows it. */
type UserAuditEvent = AuditEventOf<Body<'User'>>;

describe(`PATCH /users/{email} [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  async function add(ws: TestWorkspace, email: string, user: Record<string, unknown> = {}) {
    const res = await ctx.api(ws, 'POST', '/users', { body: userBody(email, user) });
    assert.equal(res.statusCode, 201, res.body);
    return res;
  }

  function patch(ws: TestWorkspace, email: string, user: unknown, headers: Record<string, string> = {}) {
    return ctx.api(ws, 'PATCH', `/users/${encodeURIComponent(email)}`, { body: { user }, headers });
  }

  async function get(ws: TestWorkspace, email: string) {
    return ctx.api(ws, 'GET', `/users/${encodeURIComponent(email)}`);
  }

  async function userEvents(ws: TestWorkspace) {
    const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`);
    assert.equal(res.statusCode, 200);
    return json<{ audit_events: UserAuditEvent[] }>(res).audit_events.filter((e) => e.target_type === 'user');
  }

  test('changes the fields given and keeps the others; 200 with the user and a new ETag', async () => {
    const ws = await ctx.createWorkspace();
    const created = await add(ws, 'ada@example.com', { first_name: 'Ada', last_name: 'Lovelace', apps: [{ name: 'crm', role: 'member' }] });
    const before = json<'addUser'>(created);
    assert.match(before.id, UUID);
    assert.equal(created.headers.etag, '"1"');

    const res = await patch(ws, 'ADA@example.com', { role: 'owner', first_name: 'Augusta' });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/json/);
    const user = json<'updateUser'>(res);
    assert.equal(user.id, before.id);
    assert.equal(user.email, 'ada@example.com');
    assert.equal(user.role, 'owner');
    assert.equal(user.first_name, 'Augusta');
    assert.equal(user.last_name, 'Lovelace', 'omitted: kept');
    assert.deepEqual(user.apps, [{ name: 'crm', role: 'member' }], 'omitted: kept');
    assert.equal(user.status, 'active');
    assert.equal(user.created_at, before.created_at);
    assert.ok(Date.parse(user.updated_at) > Date.parse(before.updated_at));
    assert.equal(res.headers.etag, '"2"');

    const stored = await get(ws, 'ada@example.com');
    assert.deepEqual(json<'getUser'>(stored), user, 'GET shows what PATCH answered');
    assert.equal(stored.headers.etag, res.headers.etag);
  });

  test('{"user": {}} and a PATCH of the current values change nothing: same ETag, same updated_at, no audit event', async () => {
    const ws = await ctx.createWorkspace();
    const created = json<'addUser'>(await add(ws, 'same@example.com', { first_name: 'Sam' }));
    for (const body of [{}, { first_name: 'Sam', role: 'non_owner', apps: [{ name: 'crm', role: 'member' }], status: 'active' }]) {
      const res = await patch(ws, 'same@example.com', body);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(json<'updateUser'>(res), created);
      assert.equal(res.headers.etag, '"1"');
    }
    assert.deepEqual((await userEvents(ws)).map((e) => e.action), ['user.created']);
  });

  test('first_name / last_name null reset to "-"', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'named@example.com', { first_name: 'Nora', last_name: 'Named' });
    const res = await patch(ws, 'named@example.com', { first_name: null, last_name: null });
    assert.equal(res.statusCode, 200);
    assert.equal(json<'updateUser'>(res).first_name, '-');
    assert.equal(json<'updateUser'>(res).last_name, '-');
  });

  test('apps replaces the whole set: in the given order, duplicates collapsed, [] allowed', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'apps@example.com', { apps: [{ name: 'crm', role: 'member' }, { name: 'helpdesk', role: 'agent' }] });
    const replaced = await patch(ws, 'apps@example.com', {
      apps: [{ name: 'analytics', role: 'viewer' }, { name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }, { name: 'crm', role: 'member' }],
    });
    assert.equal(replaced.statusCode, 200, replaced.body);
    const expected = [{ name: 'analytics', role: 'viewer' }, { name: 'crm', role: 'admin' }, { name: 'crm', role: 'member' }];
    assert.deepEqual(json<'updateUser'>(replaced).apps, expected);
    assert.deepEqual(json<'getUser'>(await get(ws, 'apps@example.com')).apps, expected);
    const reordered = await patch(ws, 'apps@example.com', { apps: [{ name: 'crm', role: 'member' }, { name: 'analytics', role: 'viewer' }] });
    assert.deepEqual(json<'getUser'>(await get(ws, 'apps@example.com')).apps, json<'updateUser'>(reordered).apps);
    assert.deepEqual(json<'updateUser'>(reordered).apps, [{ name: 'crm', role: 'member' }, { name: 'analytics', role: 'viewer' }]);
    const emptied = await patch(ws, 'apps@example.com', { apps: [] });
    assert.equal(emptied.statusCode, 200);
    assert.deepEqual(json<'getUser'>(await get(ws, 'apps@example.com')).apps, []);
  });

  test('unknown product or role → 422 with the field, and nothing changes', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'strict@example.com');
    const product = await patch(ws, 'strict@example.com', { role: 'owner', apps: [{ name: 'crm', role: 'admin' }, { name: 'billing', role: 'x' }] });
    assert.equal(product.statusCode, 422);
    assert.equal(json<'Problem'>(product).code, 'unknown_product');
    assert.deepEqual(json<'Problem'>(product).errors, [{ field: 'user.apps[1].name', message: 'unknown product "billing"' }]);
    const role = await patch(ws, 'strict@example.com', { apps: [{ name: 'crm', role: 'wizard' }] });
    assert.equal(role.statusCode, 422);
    assert.equal(json<'Problem'>(role).code, 'unknown_product_role');
    assert.equal(json<'Problem'>(role).errors![0]!.field, 'user.apps[0].role');
    const stored = json<'getUser'>(await get(ws, 'strict@example.com'));
    assert.equal(stored.role, 'non_owner');
    assert.deepEqual(stored.apps, [{ name: 'crm', role: 'member' }]);
  });

  test('a role the catalogue dropped: kept through other changes, but the user is not reactivated with it (422)', async () => {
    const ws = await ctx.createWorkspace();
    const product = `gone-${Date.now()}`;
    assert.equal((await ctx.admin('PUT', `/products/${product}`, { roles: ['x'] })).statusCode, 201);
    await add(ws, 'legacy@example.com', { apps: [{ name: product, role: 'x' }, { name: 'crm', role: 'member' }] });
    assert.equal((await ctx.api(ws, 'DELETE', '/users/legacy@example.com')).statusCode, 204);
    assert.equal((await ctx.admin('DELETE', `/products/${product}`)).statusCode, 204, 'only a deactivated user holds it');
    const trimmed = await patch(ws, 'legacy@example.com', { apps: [{ name: product, role: 'x' }], last_name: 'Kept' });
    assert.equal(trimmed.statusCode, 200, trimmed.body);
    assert.deepEqual(json<'updateUser'>(trimmed).apps, [{ name: product, role: 'x' }]);
    const back = await patch(ws, 'legacy@example.com', { status: 'active' });
    assert.equal(back.statusCode, 422);
    assert.equal(json<'Problem'>(back).code, 'unknown_product');
    assert.deepEqual(json<'Problem'>(back).errors, [{ field: 'user.apps[0].name', message: `unknown product "${product}"` }]);
    assert.equal(json<'getUser'>(await get(ws, 'legacy@example.com')).status, 'deactivated');
    const cleaned = await patch(ws, 'legacy@example.com', { status: 'active', apps: [] });
    assert.equal(cleaned.statusCode, 200, 'reactivated without it');
  });

  test('email renames the user: same id, old address 404, Location of the new one works; audit follows the id', async () => {
    const ws = await ctx.createWorkspace();
    const created = json<'addUser'>(await add(ws, 'old@example.com'));
    const res = await patch(ws, 'old@example.com', { email: '  New.Name@Example.com ' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(json<'updateUser'>(res).email, 'New.Name@Example.com', 'trimmed, spelling kept');
    assert.equal(json<'updateUser'>(res).id, created.id);
    assert.equal((await get(ws, 'old@example.com')).statusCode, 404);
    assert.equal(json<'getUser'>(await get(ws, 'new.name@example.com')).id, created.id);
    const caseOnly = await patch(ws, 'new.name@example.com', { email: 'new.name@example.com' });
    assert.equal(caseOnly.statusCode, 200, 'a change of letter case only is allowed');
    assert.equal(json<'updateUser'>(caseOnly).email, 'new.name@example.com');
    const history = await ctx.api(ws, 'GET', '/users/new.name@example.com/audit-events');
    assert.equal(history.statusCode, 200);
    assert.deepEqual(
      json<'listUserAuditEvents'>(history).audit_events.map((e) => [e.action, e.target_id]),
      [['user.created', 'old@example.com'], ['user.updated', 'New.Name@Example.com'], ['user.updated', 'new.name@example.com']],
    );
    assert.deepEqual(json<{ audit_events: UserAuditEvent[] }>(history).audit_events[1]!.before!.email, 'old@example.com');
    assert.ok(json<'listUserAuditEvents'>(history).audit_events.every((e) => e.user_id === created.id));
  });

  test('an email another user holds (any status, any case) → 409 user_already_exists, nothing changes', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'first@example.com');
    await add(ws, 'second@example.com');
    await add(ws, 'gone@example.com');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/gone@example.com')).statusCode, 204);
    for (const email of ['SECOND@example.com', 'gone@example.com']) {
      const res = await patch(ws, 'first@example.com', { email, first_name: 'X' });
      assert.equal(res.statusCode, 409, email);
      assert.equal(json<'Problem'>(res).code, 'user_already_exists');
    }
    const stored = json<'getUser'>(await get(ws, 'first@example.com'));
    assert.equal(stored.first_name, '-');
    assert.equal(stored.email, 'first@example.com');
  });

  test('status deactivates and reactivates, keeping role and apps; the id never changes', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'owner@example.com', { role: 'owner' });
    const created = json<'addUser'>(await add(ws, 'cycle@example.com', { role: 'owner', apps: [{ name: 'helpdesk', role: 'agent' }] }));
    const off = await patch(ws, 'cycle@example.com', { status: 'deactivated' });
    assert.equal(off.statusCode, 200);
    assert.equal(json<'updateUser'>(off).status, 'deactivated');
    assert.equal(json<'updateUser'>(off).role, 'owner');
    assert.deepEqual(json<'updateUser'>(off).apps, [{ name: 'helpdesk', role: 'agent' }]);
    const listed = await ctx.api(ws, 'GET', '/users');
    assert.ok(!json<'listUsers'>(listed).users.some((u) => u.email === 'cycle@example.com'), 'no longer listed by default');
    const renamed = await patch(ws, 'cycle@example.com', { last_name: 'Still' });
    assert.equal(renamed.statusCode, 200, 'a deactivated user can be changed');
    assert.equal(json<'updateUser'>(renamed).status, 'deactivated');
    const on = await patch(ws, 'cycle@example.com', { status: 'active' });
    assert.equal(on.statusCode, 200);
    assert.equal(json<'updateUser'>(on).status, 'active');
    assert.equal(json<'updateUser'>(on).role, 'owner');
    assert.deepEqual(json<'updateUser'>(on).apps, [{ name: 'helpdesk', role: 'agent' }]);
    assert.equal(json<'updateUser'>(on).id, created.id);
    assert.equal(on.headers.etag, '"4"');
  });

  test('the last active owner cannot be demoted or deactivated (409 last_owner); with two owners one can', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'solo@example.com', { role: 'owner' });
    for (const change of [{ role: 'non_owner' }, { status: 'deactivated' }, { role: 'non_owner', status: 'deactivated' }]) {
      const res = await patch(ws, 'solo@example.com', change);
      assert.equal(res.statusCode, 409, JSON.stringify(change));
      assert.equal(json<'Problem'>(res).code, 'last_owner');
    }
    assert.equal(json<'getUser'>(await get(ws, 'solo@example.com')).role, 'owner');
    await add(ws, 'duo@example.com', { role: 'owner' });
    assert.equal((await patch(ws, 'solo@example.com', { role: 'non_owner' })).statusCode, 200);
    assert.equal(json<'Problem'>(await patch(ws, 'duo@example.com', { role: 'non_owner' })).code, 'last_owner');
  });

  test('two owners demoting each other at once: exactly one succeeds, one active owner remains', async () => {
    for (let round = 0; round < 5; round += 1) {
      const ws = await ctx.createWorkspace();
      await add(ws, 'a@example.com', { role: 'owner' });
      await add(ws, 'b@example.com', { role: 'owner' });
      const results = await Promise.all([
        patch(ws, 'a@example.com', { role: 'non_owner' }),
        patch(ws, 'b@example.com', { status: 'deactivated' }),
      ]);
      assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 409], `round ${round}`);
      const owners = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { role: 'owner' } })).users;
      assert.equal(owners.length, 1, `round ${round}: one active owner left`);
    }
  });

  test('If-Match: the current ETag or * → 200; a stale, weak or unknown one → 412 and nothing changes; malformed → 400', async () => {
    const ws = await ctx.createWorkspace();
    const etag = (await add(ws, 'cas@example.com')).headers.etag as string;
    const ok = await patch(ws, 'cas@example.com', { first_name: 'One' }, { 'if-match': etag });
    assert.equal(ok.statusCode, 200);
    const stale = await patch(ws, 'cas@example.com', { first_name: 'Two' }, { 'if-match': etag });
    assert.equal(stale.statusCode, 412);
    assert.equal(json<'Problem'>(stale).code, 'precondition_failed');
    assert.match(stale.headers['content-type'] as string, /^application\/problem\+json/);
    for (const header of [`W/${ok.headers.etag}`, '"999"', '"abc"']) {
      assert.equal((await patch(ws, 'cas@example.com', { first_name: 'Two' }, { 'if-match': header })).statusCode, 412, header);
    }
    assert.equal(json<'getUser'>(await get(ws, 'cas@example.com')).first_name, 'One');
    const listed = await patch(ws, 'cas@example.com', { first_name: 'Three' }, { 'if-match': `"77", ${ok.headers.etag}` });
    assert.equal(listed.statusCode, 200, 'any tag of a list may match');
    assert.equal((await patch(ws, 'cas@example.com', { first_name: 'Four' }, { 'if-match': '*' })).statusCode, 200);
    const malformed = await patch(ws, 'cas@example.com', { first_name: 'Five' }, { 'if-match': 'not-a-tag' });
    assert.equal(malformed.statusCode, 400);
    assert.equal(json<'Problem'>(malformed).code, 'invalid_parameter');
    assert.equal(json<'getUser'>(await get(ws, 'cas@example.com')).first_name, 'Four');
    const missing = await patch(ws, 'nobody@example.com', { first_name: 'X' }, { 'if-match': '*' });
    assert.equal(missing.statusCode, 404, '* matches only an existing user');
  });

  test('DELETE honours If-Match too', async () => {
    const ws = await ctx.createWorkspace();
    const etag = (await add(ws, 'del@example.com')).headers.etag as string;
    await patch(ws, 'del@example.com', { first_name: 'Changed' });
    const stale = await ctx.api(ws, 'DELETE', '/users/del@example.com', { headers: { 'if-match': etag } });
    assert.equal(stale.statusCode, 412);
    assert.equal(json<'getUser'>(await get(ws, 'del@example.com')).status, 'active');
    const fresh = (await get(ws, 'del@example.com')).headers.etag as string;
    assert.equal((await ctx.api(ws, 'DELETE', '/users/del@example.com', { headers: { 'if-match': fresh } })).statusCode, 204);
    assert.equal(json<'getUser'>(await get(ws, 'del@example.com')).status, 'deactivated');
  });

  test('Idempotency-Key: a retry replays the first answer; another body with the same key → 422', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'idem@example.com');
    const headers = { 'idempotency-key': 'patch-1' };
    const first = await patch(ws, 'idem@example.com', { first_name: 'Once' }, headers);
    assert.equal(first.statusCode, 200);
    await patch(ws, 'idem@example.com', { first_name: 'Between' });
    const replay = await patch(ws, 'idem@example.com', { first_name: 'Once' }, headers);
    assert.equal(replay.statusCode, 200);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(json<'updateUser'>(replay), json<'updateUser'>(first));
    assert.ok(first.headers.etag, 'the change answers with its ETag');
    assert.equal(replay.headers.etag, first.headers.etag, 'the replay carries the same ETag');
    assert.equal(json<'getUser'>(await get(ws, 'idem@example.com')).first_name, 'Between', 'the replay changed nothing');
    const reused = await patch(ws, 'idem@example.com', { first_name: 'Other' }, headers);
    assert.equal(reused.statusCode, 422);
    assert.equal(json<'Problem'>(reused).code, 'idempotency_key_reused');
  });

  test('media types: application/json and application/merge-patch+json; anything else → 415', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'media@example.com');
    const url = '/users/media@example.com';
    const merge = await ctx.api(ws, 'PATCH', url, {
      body: JSON.stringify({ user: { first_name: 'Merge' } }),
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(merge.statusCode, 200, merge.body);
    assert.equal(json<'updateUser'>(merge).first_name, 'Merge');
    const text = await ctx.api(ws, 'PATCH', url, { body: 'user', headers: { 'content-type': 'text/plain' } });
    assert.equal(text.statusCode, 415);
    assert.equal(json<'Problem'>(text).code, 'unsupported_media_type');
    const broken = await ctx.api(ws, 'PATCH', url, { body: '{"user": {', headers: { 'content-type': 'application/json' } });
    assert.equal(broken.statusCode, 400);
    assert.equal(json<'Problem'>(broken).code, 'malformed_json');
    const postMerge = await ctx.api(ws, 'POST', '/users', {
      body: JSON.stringify(userBody('m2@example.com')),
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(postMerge.statusCode, 415, 'POST /users stays application/json only');
  });

  test('bad bodies → 400 validation_failed naming the field; unknown user → 404; nothing changes', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'val@example.com');
    const cases: Array<[unknown, string]> = [
      [{ firstName: 'typo' }, 'user.firstName'],
      [{ role: 'admin' }, 'user.role'],
      [{ email: 'not-an-email' }, 'user.email'],
      [{ status: 'gone' }, 'user.status'],
      [{ apps: [{ name: 'crm' }] }, 'user.apps[0].role'],
      [{ first_name: 'x'.repeat(256) }, 'user.first_name'],
    ];
    for (const [user, field] of cases) {
      const res = await patch(ws, 'val@example.com', user);
      assert.equal(res.statusCode, 400, JSON.stringify(user));
      assert.equal(json<'Problem'>(res).code, 'validation_failed');
      assert.ok(json<'Problem'>(res).errors!.some((e) => e.field === field), `${field} in ${res.body}`);
    }
    const noUser = await ctx.api(ws, 'PATCH', '/users/val@example.com', { body: { first_name: 'x' } });
    assert.equal(noUser.statusCode, 400);
    assert.equal(json<'Problem'>(noUser).errors![0]!.field, 'user');
    const missing = await patch(ws, 'ghost@example.com', { first_name: 'x' });
    assert.equal(missing.statusCode, 404);
    assert.equal(json<'Problem'>(missing).code, 'user_not_found');
    assert.equal((await get(ws, 'val@example.com')).headers.etag, '"1"');
  });

  test('audited as user.updated with before/after, attributed to the key and request', async () => {
    const ws = await ctx.createWorkspace();
    const created = json<'addUser'>(await add(ws, 'aud@example.com'));
    const res = await patch(ws, 'aud@example.com', { role: 'owner', apps: [] }, { 'x-request-id': 'req-patch-1' });
    assert.equal(res.statusCode, 200);
    const events = await userEvents(ws);
    const updated = events.at(-1)!;
    assert.equal(updated.action, 'user.updated');
    assert.equal(updated.actor_type, 'api_key');
    assert.equal(updated.actor_id, ws.apiKeyId);
    assert.equal(updated.request_id, 'req-patch-1');
    assert.equal(updated.user_id, created.id);
    assert.equal(updated.before!.role, 'non_owner');
    assert.deepEqual(updated.before!.apps, [{ name: 'crm', role: 'member' }]);
    assert.equal(updated.after!.role, 'owner');
    assert.deepEqual(updated.after!.apps, []);
  });

  test('PATCH on /users is 405 with Allow; other methods on a user list PATCH in Allow', async () => {
    const ws = await ctx.createWorkspace();
    const res = await ctx.api(ws, 'PUT', '/users/x@example.com', { body: { user: {} } });
    assert.equal(res.statusCode, 405);
    assert.equal(res.headers.allow, 'GET, PATCH, DELETE, HEAD');
  });
});
