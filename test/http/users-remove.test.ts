import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

describe(`DELETE /users/{email} [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  async function add(ws: TestWorkspace, email: string, user: Record<string, unknown> = {}) {
    const res = await ctx.api(ws, 'POST', '/users', { body: userBody(email, user) });
    assert.equal(res.statusCode, 201, res.body);
    return json<'addUser'>(res);
  }

  async function getUser(ws: TestWorkspace, email: string) {
    const res = await ctx.api(ws, 'GET', `/users/${encodeURIComponent(email)}`);
    assert.equal(res.statusCode, 200, res.body);
    return json<'getUser'>(res);
  }

  async function activeOwners(ws: TestWorkspace): Promise<string[]> {
    const res = await ctx.api(ws, 'GET', '/users', { query: { status: 'active', page_size: '100' } });
    assert.equal(res.statusCode, 200);
    return json<'listUsers'>(res).users.filter((u: { role: string }) => u.role === 'owner').map((u: { email: string }) => u.email);
  }

  test('deactivates an active user: 204, empty body; the user is kept, deactivated, with its apps', async () => {
    const ws = await ctx.createWorkspace();
    const added = await add(ws, 'ada@example.com', {
      first_name: 'Ada',
      last_name: 'Lovelace',
      apps: [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }],
    });
    const res = await ctx.api(ws, 'DELETE', '/users/ada@example.com');
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
    assert.equal(res.headers['content-length'] ?? '0', '0');

    const user = await getUser(ws, 'ada@example.com');
    assert.equal(user.status, 'deactivated');
    assert.equal(user.email, 'ada@example.com');
    assert.equal(user.role, 'non_owner');
    assert.equal(user.first_name, 'Ada');
    assert.equal(user.last_name, 'Lovelace');
    assert.deepEqual(user.apps, [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }]);
    assert.equal(user.created_at, added.created_at);
    assert.ok(Date.parse(user.updated_at) >= Date.parse(added.updated_at));
  });

  test('the deactivated user leaves the default list but appears under status=deactivated', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'stay@example.com');
    await add(ws, 'leave@example.com');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/leave@example.com')).statusCode, 204);
    const active = json<'listUsers'>(await ctx.api(ws, 'GET', '/users'));
    assert.deepEqual(active.users.map((u: { email: string }) => u.email), ['stay@example.com']);
    assert.equal(active.total_count, 1);
    const gone = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status: 'deactivated' } }));
    assert.deepEqual(gone.users.map((u: { email: string }) => u.email), ['leave@example.com']);
    assert.deepEqual(gone.users[0]!.apps, [{ name: 'crm', role: 'member' }], 'a deactivated list item still shows its apps');
  });

  test('an already deactivated user: 204 again, nothing changes', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'twice@example.com');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/twice@example.com')).statusCode, 204);
    const first = await getUser(ws, 'twice@example.com');
    for (let i = 0; i < 3; i += 1) {
      const again = await ctx.api(ws, 'DELETE', '/users/twice@example.com');
      assert.equal(again.statusCode, 204);
      assert.equal(again.body, '');
    }
    const later = await getUser(ws, 'twice@example.com');
    assert.deepEqual(later, first, 'updated_at and everything else unchanged');
    assert.equal(later.status, 'deactivated');
  });

  test('unknown email → 404 user_not_found problem, nothing created', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'known@example.com');
    const res = await ctx.api(ws, 'DELETE', '/users/unknown@example.com');
    assert.equal(res.statusCode, 404);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, 'user_not_found');
    assert.equal(json<'Problem'>(res).status, 404);
    const all = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status: 'all' } }));
    assert.deepEqual(all.users.map((u: { email: string }) => u.email), ['known@example.com']);
    assert.equal(all.users[0]!.status, 'active');
  });

  test('an email no stored user can have: over-long → 404 user_not_found, NUL → 400 invalid_parameter, never a 5xx', async () => {
    const ws = await ctx.createWorkspace();
    const long = await ctx.api(ws, 'DELETE', `/users/${'x'.repeat(300)}%40example.com`);
    assert.equal(long.statusCode, 404, long.body);
    assert.equal(json<'Problem'>(long).code, 'user_not_found');
    const nul = await ctx.api(ws, 'DELETE', '/users/a%00b%40example.com');
    assert.equal(nul.statusCode, 400, nul.body);
    assert.equal(json<'Problem'>(nul).code, 'invalid_parameter');
  });

  test('the email is percent-decoded and matched case-insensitively', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'Mixed.Case@Example.com');
    const res = await ctx.api(ws, 'DELETE', '/users/mixed.case%40EXAMPLE.COM');
    assert.equal(res.statusCode, 204);
    const user = await getUser(ws, 'mixed.case@example.com');
    assert.equal(user.status, 'deactivated');
    assert.equal(user.email, 'Mixed.Case@Example.com', 'the stored spelling is kept');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/MIXED.CASE@example.com')).statusCode, 204, 'unencoded @ works too');
  });

  test('a "+" in the path is a plus sign, not a space; %2B decodes to "+"', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'a+tag@example.com');
    await add(ws, 'b+tag@example.com');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/a+tag@example.com')).statusCode, 204);
    assert.equal((await ctx.api(ws, 'DELETE', '/users/b%2Btag%40example.com')).statusCode, 204);
    assert.equal((await getUser(ws, 'a+tag@example.com')).status, 'deactivated');
    assert.equal((await getUser(ws, 'b+tag@example.com')).status, 'deactivated');
  });

  test('a long (but valid) email can be deactivated through its Location', async () => {
    const ws = await ctx.createWorkspace();
    const email = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;
    assert.equal(email.length, 254);
    const created = await ctx.api(ws, 'POST', '/users', { body: userBody(email) });
    assert.equal(created.statusCode, 201);
    const location = created.headers.location as string;
    const res = await ctx.app.inject({ method: 'DELETE', url: location, headers: { host: ws.host, 'x-api-key': ws.apiKey } });
    assert.equal(res.statusCode, 204, res.body);
    assert.equal((await getUser(ws, email)).status, 'deactivated');
  });

  test('deactivating the last active owner → 409 last_owner; the owner stays active', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'owner@example.com', { role: 'owner' });
    await add(ws, 'member@example.com');
    const res = await ctx.api(ws, 'DELETE', '/users/owner@example.com');
    assert.equal(res.statusCode, 409);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, 'last_owner');
    const owner = await getUser(ws, 'owner@example.com');
    assert.equal(owner.status, 'active');
    assert.equal(owner.role, 'owner');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/member@example.com')).statusCode, 204, 'non-owners can still leave');
  });

  test('with two owners one may leave, then the other is the last', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'o1@example.com', { role: 'owner' });
    await add(ws, 'o2@example.com', { role: 'owner' });
    assert.equal((await ctx.api(ws, 'DELETE', '/users/o1@example.com')).statusCode, 204);
    const last = await ctx.api(ws, 'DELETE', '/users/o2@example.com');
    assert.equal(last.statusCode, 409);
    assert.equal(json<'Problem'>(last).code, 'last_owner');
    assert.deepEqual(await activeOwners(ws), ['o2@example.com']);
    assert.equal((await ctx.api(ws, 'DELETE', '/users/o1@example.com')).statusCode, 204, 'the deactivated owner: 204 again');
  });

  test('a deactivated owner does not count: the remaining active owner is the last', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'old-owner@example.com', { role: 'owner' });
    await add(ws, 'new-owner@example.com', { role: 'owner' });
    assert.equal((await ctx.api(ws, 'DELETE', '/users/old-owner@example.com')).statusCode, 204);
    const res = await ctx.api(ws, 'DELETE', '/users/new-owner@example.com');
    assert.equal(res.statusCode, 409);
    assert.equal(json<'Problem'>(res).code, 'last_owner');
  });

  test('reactivating a deactivated owner lets the other owner leave', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'p1@example.com', { role: 'owner' });
    await add(ws, 'p2@example.com', { role: 'owner' });
    assert.equal((await ctx.api(ws, 'DELETE', '/users/p1@example.com')).statusCode, 204);
    await add(ws, 'p1@example.com', { role: 'owner' });
    assert.equal((await ctx.api(ws, 'DELETE', '/users/p2@example.com')).statusCode, 204);
    assert.deepEqual(await activeOwners(ws), ['p1@example.com']);
  });

  test('a non-owner can be deactivated when the workspace has no owner at all', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'n1@example.com');
    await add(ws, 'n2@example.com');
    assert.equal((await ctx.api(ws, 'DELETE', '/users/n1@example.com')).statusCode, 204);
    assert.equal((await ctx.api(ws, 'DELETE', '/users/n2@example.com')).statusCode, 204);
    const list = json<'listUsers'>(await ctx.api(ws, 'GET', '/users'));
    assert.equal(list.total_count, 0);
  });

  test('two owners removed concurrently: exactly one 204 and one 409 last_owner, one owner remains (10 rounds)', async () => {
    for (let round = 0; round < 10; round += 1) {
      const ws = await ctx.createWorkspace('race');
      await add(ws, 'first@example.com', { role: 'owner' });
      await add(ws, 'second@example.com', { role: 'owner' });
      const responses = await Promise.all([
        ctx.api(ws, 'DELETE', '/users/first@example.com'),
        ctx.api(ws, 'DELETE', '/users/second@example.com'),
      ]);
      const codes = responses.map((r) => r.statusCode).sort();
      assert.deepEqual(codes, [204, 409], `round ${round}`);
      const conflict = responses.find((r) => r.statusCode === 409)!;
      assert.equal(json<'Problem'>(conflict).code, 'last_owner');
      const winner = responses[0].statusCode === 409 ? 'first@example.com' : 'second@example.com';
      assert.deepEqual(await activeOwners(ws), [winner], `round ${round}: the refused owner stays`);
    }
  });

  test('three owners removed concurrently: two leave, one stays', async () => {
    const ws = await ctx.createWorkspace('race3');
    const emails = ['x1@example.com', 'x2@example.com', 'x3@example.com'];
    for (const email of emails) await add(ws, email, { role: 'owner' });
    const responses = await Promise.all(emails.map((e) => ctx.api(ws, 'DELETE', `/users/${e}`)));
    assert.deepEqual(responses.map((r) => r.statusCode).sort(), [204, 204, 409]);
    assert.equal((await activeOwners(ws)).length, 1);
  });

  test('the same owner removed concurrently while another owner exists: both 204, one owner left', async () => {
    const ws = await ctx.createWorkspace('same');
    await add(ws, 'keep@example.com', { role: 'owner' });
    await add(ws, 'go@example.com', { role: 'owner' });
    const responses = await Promise.all([
      ctx.api(ws, 'DELETE', '/users/go@example.com'),
      ctx.api(ws, 'DELETE', '/users/GO@example.com'),
    ]);
    assert.deepEqual(responses.map((r) => r.statusCode), [204, 204]);
    assert.deepEqual(await activeOwners(ws), ['keep@example.com']);
  });

  test('without a key → 401 missing_api_key, the user is not touched', async () => {
    const ws = await ctx.createWorkspace();
    await add(ws, 'safe@example.com');
    const res = await ctx.api(ws, 'DELETE', '/users/safe@example.com', { noKey: true });
    assert.equal(res.statusCode, 401);
    assert.equal(json<'Problem'>(res).code, 'missing_api_key');
    assert.equal((await getUser(ws, 'safe@example.com')).status, 'active');
  });
});
