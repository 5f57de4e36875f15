import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BACKEND, createTestContext, userBody, type TestContext } from '../helpers/test-context.ts';

describe(`hostile and edge-case input never reaches the database as a 5xx [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  test('a NUL character in a body string → 400 validation_failed naming the field; nothing stored', async () => {
    const ws = await ctx.createWorkspace();
    const res = await ctx.api(ws, 'POST', '/users', { body: userBody('nul@example.com', { first_name: 'a\u0000b' }) });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'validation_failed');
    assert.deepEqual(res.json().errors, [{ field: 'user.first_name', message: 'must not contain NUL characters' }]);
    assert.equal((await ctx.api(ws, 'GET', '/users/nul@example.com')).statusCode, 404);
  });

  test('a NUL character in a path parameter → 400 invalid_parameter, on the external and the admin API', async () => {
    const ws = await ctx.createWorkspace();
    for (const [method, path] of [['GET', '/users/a%00b'], ['DELETE', '/users/a%00b']] as const) {
      const res = await ctx.api(ws, method, path);
      assert.equal(res.statusCode, 400, `${method} ${path}`);
      assert.equal(res.json().code, 'invalid_parameter');
    }
    for (const path of ['/workspaces/a%00b', '/workspaces/a%00b/api-keys', '/workspaces/a%00b/audit-events', '/products/a%00b']) {
      const res = await ctx.admin('GET', path);
      assert.equal(res.statusCode, 400, path);
      assert.equal(res.json().code, 'invalid_parameter');
    }
  });

  test('a NUL character in a query value → 400 invalid_parameter', async () => {
    const ws = await ctx.createWorkspace();
    const res = await ctx.api(ws, 'GET', '/users?status=a%00');
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'invalid_parameter');
  });

  test('page_number above 2^31 - 1 → 400 invalid_parameter on every paginated listing', async () => {
    const ws = await ctx.createWorkspace();
    const huge = { page_number: '100000000000000000000' };
    const users = await ctx.api(ws, 'GET', '/users', { query: huge });
    assert.equal(users.statusCode, 400);
    assert.equal(users.json().errors[0].field, 'page_number');
    for (const path of ['/workspaces', '/audit-events', `/workspaces/${ws.subdomain}/audit-events`]) {
      const res = await ctx.admin('GET', `${path}?page_number=100000000000000000000`);
      assert.equal(res.statusCode, 400, path);
      assert.equal(res.json().code, 'invalid_parameter');
    }
    const last = await ctx.api(ws, 'GET', '/users', { query: { page_number: '2147483647' } });
    assert.equal(last.statusCode, 200);
    assert.deepEqual(last.json().users, []);
  });

  test('putting a product with exactly its current roles records no change', async () => {
    const name = `same-${process.pid}`;
    assert.equal((await ctx.admin('PUT', `/products/${name}`, { roles: ['a', 'b'] })).statusCode, 201);
    const first = (await ctx.admin('GET', `/products/${name}`)).json();
    const eventsBefore = (await ctx.admin('GET', '/audit-events?page_size=1')).json().total_count;
    const again = await ctx.admin('PUT', `/products/${name}`, { roles: ['a', 'b'] });
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().updated_at, first.updated_at);
    assert.equal((await ctx.admin('GET', '/audit-events?page_size=1')).json().total_count, eventsBefore);
    const reordered = await ctx.admin('PUT', `/products/${name}`, { roles: ['b', 'a'] });
    assert.deepEqual(reordered.json().roles, ['b', 'a']);
    assert.equal((await ctx.admin('GET', '/audit-events?page_size=1')).json().total_count, eventsBefore + 1);
  });

  test('a wrong key is answered with the failed-attempt limit in RateLimit fields', async () => {
    const ws = await ctx.createWorkspace();
    const res = await ctx.app.inject({
      method: 'GET',
      url: '/api/external/v2/users',
      headers: { host: ws.host, 'x-api-key': 'wum_not-a-key' },
      remoteAddress: '203.0.113.9',
    });
    assert.equal(res.statusCode, 401);
    assert.equal(res.headers['ratelimit-policy'], '"auth-failures";q=20;w=60');
    assert.match(String(res.headers.ratelimit), /^"auth-failures";r=19;t=\d+$/);
  });
});
