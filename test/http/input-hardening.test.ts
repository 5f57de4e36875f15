import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type ScimError } from '../helpers/json.ts';

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
    assert.equal(json<'Problem'>(res).code, 'validation_failed');
    assert.deepEqual(json<'Problem'>(res).errors, [{ field: 'user.first_name', message: 'must not contain NUL characters' }]);
    assert.equal((await ctx.api(ws, 'GET', '/users/nul@example.com')).statusCode, 404);
  });

  test('a NUL character in a path parameter → 400 invalid_parameter, on the external and the admin API', async () => {
    const ws = await ctx.createWorkspace();
    for (const [method, path] of [['GET', '/users/a%00b'], ['DELETE', '/users/a%00b']] as const) {
      const res = await ctx.api(ws, method, path);
      assert.equal(res.statusCode, 400, `${method} ${path}`);
      assert.equal(json<'Problem'>(res).code, 'invalid_parameter');
    }
    for (const path of ['/workspaces/a%00b', '/workspaces/a%00b/api-keys', '/workspaces/a%00b/audit-events', '/products/a%00b']) {
      const res = await ctx.admin('GET', path);
      assert.equal(res.statusCode, 400, path);
      assert.equal(json<'Problem'>(res).code, 'invalid_parameter');
    }
  });

  test('a NUL character in a query value → 400 invalid_parameter', async () => {
    const ws = await ctx.createWorkspace();
    const res = await ctx.api(ws, 'GET', '/users?status=a%00');
    assert.equal(res.statusCode, 400);
    assert.equal(json<'Problem'>(res).code, 'invalid_parameter');
  });

  test('page_number above 2^31 - 1 → 400 invalid_parameter on every paginated listing', async () => {
    const ws = await ctx.createWorkspace();
    const huge = { page_number: '100000000000000000000' };
    const users = await ctx.api(ws, 'GET', '/users', { query: huge });
    assert.equal(users.statusCode, 400);
    assert.equal(json<'Problem'>(users).errors![0]!.field, 'page_number');
    for (const path of ['/workspaces', '/audit-events', `/workspaces/${ws.subdomain}/audit-events`]) {
      const res = await ctx.admin('GET', `${path}?page_number=100000000000000000000`);
      assert.equal(res.statusCode, 400, path);
      assert.equal(json<'Problem'>(res).code, 'invalid_parameter');
    }
    const last = await ctx.api(ws, 'GET', '/users', { query: { page_number: '2147483647' } });
    assert.equal(last.statusCode, 200);
    assert.deepEqual(json<'listUsers'>(last).users, []);
  });

  test('putting a product with exactly its current roles records no change', async () => {
    const name = `same-${process.pid}`;
    assert.equal((await ctx.admin('PUT', `/products/${name}`, { roles: ['a', 'b'] })).statusCode, 201);
    const first = json<'getCatalogueProduct'>(await ctx.admin('GET', `/products/${name}`));
    const eventsBefore = json<'listAuditEvents'>(await ctx.admin('GET', '/audit-events?page_size=1')).total_count;
    const again = await ctx.admin('PUT', `/products/${name}`, { roles: ['a', 'b'] });
    assert.equal(again.statusCode, 200);
    assert.equal(json<'putCatalogueProduct'>(again).updated_at, first.updated_at);
    assert.equal(json<'listAuditEvents'>(await ctx.admin('GET', '/audit-events?page_size=1')).total_count, eventsBefore);
    const reordered = await ctx.admin('PUT', `/products/${name}`, { roles: ['b', 'a'] });
    assert.deepEqual(json<'putCatalogueProduct'>(reordered).roles, ['b', 'a']);
    assert.equal(json<'listAuditEvents'>(await ctx.admin('GET', '/audit-events?page_size=1')).total_count, eventsBefore! + 1);
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

  const scim = (ws: TestWorkspace, method: 'GET' | 'POST', url: string, payload?: string) =>
    ctx.app.inject({
      method,
      url: `/scim/v2${url}`,
      headers: { host: ws.host, authorization: `Bearer ${ws.apiKey}`, ...(payload === undefined ? {} : { 'content-type': 'application/scim+json' }) },
      ...(payload === undefined ? {} : { payload }),
    });

  test('a JSON body nested deeper than 64 levels → 400 validation_failed naming the limit, on every JSON media type; nothing stored', async () => {
    const ws = await ctx.createWorkspace();
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const user = JSON.stringify(userBody('deep@example.com')).replace(/}$/, `, "x": ${deep(6000)}}`);
    const res = await ctx.app.inject({ method: 'POST', url: '/api/external/v2/users', headers: { host: ws.host, 'x-api-key': ws.apiKey, 'content-type': 'application/json' }, payload: user });
    assert.equal(res.statusCode, 400);
    assert.equal(json<'Problem'>(res).code, 'validation_failed');
    assert.match(json<'Problem'>(res).detail, /deeper than 64 levels/);
    const patch = await ctx.app.inject({ method: 'PATCH', url: '/api/external/v2/users/deep@example.com', headers: { host: ws.host, 'x-api-key': ws.apiKey, 'content-type': 'application/merge-patch+json' }, payload: `{"user": ${deep(100)}}` });
    assert.equal(patch.statusCode, 400);
    assert.match(json<'Problem'>(patch).detail, /deeper than 64 levels/);
    const viaScim = await scim(ws, 'POST', '/Users', `{"userName": "deep@example.com", "x": ${deep(6000)}}`);
    assert.equal(viaScim.statusCode, 400);
    assert.match(json<'Problem'>(viaScim).detail, /deeper than 64 levels/);
    // Brackets inside strings are text, not nesting.
    const inString = await ctx.api(ws, 'POST', '/users', { body: userBody('brackets@example.com', { first_name: '['.repeat(100) }) });
    assert.equal(inString.statusCode, 201, inString.body);
    assert.equal((await ctx.api(ws, 'GET', '/users/deep@example.com')).statusCode, 404);
  });

  test('a lone surrogate in a body string, a key or a query value → 400 naming the field; nothing stored', async () => {
    const ws = await ctx.createWorkspace();
    const body = JSON.stringify(userBody('surrogate@example.com')).replace('"user":{', '"user":{"first_name":"a\\ud800b",');
    const res = await ctx.app.inject({ method: 'POST', url: '/api/external/v2/users', headers: { host: ws.host, 'x-api-key': ws.apiKey, 'content-type': 'application/json' }, payload: body });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(json<'Problem'>(res).code, 'validation_failed');
    assert.deepEqual(json<'Problem'>(res).errors, [{ field: 'user.first_name', message: 'must be valid Unicode (no lone surrogate such as \\ud800)' }]);
    const low = await ctx.app.inject({ method: 'POST', url: '/api/external/v2/users', headers: { host: ws.host, 'x-api-key': ws.apiKey, 'content-type': 'application/json' }, payload: body.replace('\\ud800', '\\udc00') });
    assert.equal(low.statusCode, 400);
    const viaScim = await scim(ws, 'POST', '/Users', '{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "surrogate@example.com", "name": {"givenName": "\\udbff"}}');
    assert.equal(viaScim.statusCode, 400, viaScim.body);
    assert.equal((await ctx.api(ws, 'GET', '/users/surrogate@example.com')).statusCode, 404);
    const pair = await ctx.api(ws, 'POST', '/users', { body: userBody('pair@example.com', { first_name: 'smile \u{1F600}' }) });
    assert.equal(pair.statusCode, 201, pair.body);
    assert.equal(json<'User'>(pair).first_name, 'smile \u{1F600}');
  });

  test('GET /events?after= beyond 2^53 - 1 or beyond a 64-bit integer → 400 invalid_parameter, never rounded or a 500', async () => {
    const ws = await ctx.createWorkspace();
    for (const after of ['9223372036854775807', '9223372036854775808', '1e20', '9007199254740993', '9007199254740992', '-1']) {
      const res = await ctx.api(ws, 'GET', '/events', { query: { after } });
      assert.equal(res.statusCode, 400, `after=${after}: ${res.body}`);
      assert.equal(json<'Problem'>(res).code, 'invalid_parameter');
      assert.equal(json<'Problem'>(res).errors![0]!.field, 'after');
    }
    const largest = await ctx.api(ws, 'GET', '/events', { query: { after: '9007199254740991' } });
    assert.equal(largest.statusCode, 200);
    assert.match(largest.body, /"next_after":9007199254740991\b/);
  });

  test('a SCIM filter nested deeper than 16 levels → 400 invalidFilter naming the limit, never an engine message', async () => {
    const ws = await ctx.createWorkspace();
    for (const filter of [`${'not ('.repeat(150)}userName eq "a"${')'.repeat(150)}`, `${'('.repeat(17)}userName eq "a"${')'.repeat(17)}`]) {
      const res = await scim(ws, 'GET', `/Users?filter=${encodeURIComponent(filter)}`);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(json<ScimError>(res).scimType, 'invalidFilter');
      assert.match(json<'Problem'>(res).detail, /deeper than 16 levels/);
      assert.doesNotMatch(res.body, /call stack|RangeError/i);
    }
    const fine = await scim(ws, 'GET', `/Users?filter=${encodeURIComponent(`${'('.repeat(16)}userName eq "a"${')'.repeat(16)}`)}`);
    assert.equal(fine.statusCode, 200, fine.body);
  });
});
