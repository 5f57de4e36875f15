import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, userBody, type TestContext } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe(`admin API: workspaces [${BACKEND}]`, () => {
  let ctx: TestContext;
  let counter = 0;

  /** A subdomain no other test of this file uses. */
  const unique = (prefix = 'aw') => `${prefix}-${process.pid}-${++counter}`;

  /** Calls the admin API with any headers (none by default, so no token). */
  const raw = (method: InjectOptions['method'], path: string, headers: Record<string, string> = {}, body?: unknown) =>
    ctx.app.inject({
      method,
      url: `/admin/v1${path}`,
      headers,
      ...(body === undefined ? {} : { payload: body as object }),
    });

  /** Calls the external API of `subdomain` with `key`. */
  const external = (subdomain: string, key: string, method: InjectOptions['method'] = 'GET', path = '/users') =>
    ctx.app.inject({ method, url: `${API}${path}`, headers: { host: `${subdomain}.localhost`, 'x-api-key': key } });

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    const problem = json<'Problem'>(res);
    assert.equal(problem.code, code);
    assert.equal(problem.status, status);
    assert.equal(typeof problem.request_id, 'string');
  }

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  test('a missing Authorization header → 401 invalid_admin_token on every admin route', async () => {
    const subdomain = unique();
    for (const [method, path] of [
      ['GET', '/workspaces'],
      ['POST', '/workspaces'],
      ['GET', '/workspaces/x'],
      ['DELETE', '/workspaces/x'],
      ['GET', '/products'],
      ['GET', '/audit-events'],
    ] as const) {
      const res = await raw(method, path, {}, method === 'POST' ? { subdomain } : undefined);
      assertProblem(res, 401, 'invalid_admin_token');
      assert.match(res.headers['www-authenticate'] as string, /^Bearer/);
    }
    assertProblem(await ctx.admin('GET', `/workspaces/${subdomain}`), 404, 'workspace_not_found');
  });

  test('a wrong token, another scheme, or an empty bearer → 401 invalid_admin_token', async () => {
    for (const authorization of [
      'Bearer wrong-token-0123456789',
      `Bearer ${ADMIN_TOKEN}x`,
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
      `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`,
      ADMIN_TOKEN,
      'Bearer ',
      'Bearer',
    ]) {
      const res = await raw('GET', '/workspaces', { authorization });
      assertProblem(res, 401, 'invalid_admin_token');
    }
  });

  test('a request rejected for its token creates no workspace', async () => {
    const subdomain = unique();
    const res = await raw('POST', '/workspaces', { authorization: 'Bearer not-the-admin-token' }, { subdomain });
    assertProblem(res, 401, 'invalid_admin_token');
    assertProblem(await ctx.admin('GET', `/workspaces/${subdomain}`), 404, 'workspace_not_found');
  });

  test('the right token is accepted on any host that is not a workspace\'s; on a workspace host the API does not exist', async () => {
    for (const host of ['localhost', '127.0.0.1:3000', 'admin.example.org']) {
      const res = await raw('GET', '/workspaces', { authorization: `Bearer ${ADMIN_TOKEN}`, host });
      assert.equal(res.statusCode, 200, `${host}: ${res.body}`);
    }
    assert.equal((await raw('GET', '/workspaces', { authorization: `Bearer ${ADMIN_TOKEN}`, host: 'acme.localhost:3000' })).statusCode, 404);
  });

  test('the admin API does not exist when ADMIN_TOKEN is unset (empty counts as unset): 404 not_found', async () => {
    const app = await ctx.buildApp({ ADMIN_TOKEN: '' });
    for (const [method, path] of [
      ['GET', '/admin/v1/workspaces'],
      ['POST', '/admin/v1/workspaces'],
      ['GET', '/admin/v1/products'],
    ] as const) {
      for (const headers of [{}, { authorization: `Bearer ${ADMIN_TOKEN}` }, { authorization: 'Bearer ' }]) {
        const res = await app.inject({
          method,
          url: path,
          headers,
          ...(method === 'POST' ? { payload: { subdomain: unique() } } : {}),
        });
        assertProblem(res, 404, 'not_found');
      }
    }
  });

  test('201 with the workspace and a first key that works at once on the external API', async () => {
    const subdomain = unique();
    const res = await ctx.admin('POST', '/workspaces', { subdomain, name: 'Acme Inc' });
    assert.equal(res.statusCode, 201, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/json/);
    const body = json<'createWorkspace'>(res);
    assert.deepEqual(Object.keys(body).sort(), ['api_key', 'created_at', 'name', 'subdomain']);
    assert.equal(body.subdomain, subdomain);
    assert.equal(body.name, 'Acme Inc');
    assert.match(body.created_at, TIMESTAMP);
    assert.deepEqual(Object.keys(body.api_key).sort(), ['created_at', 'created_by', 'expires_at', 'id', 'key', 'name', 'prefix', 'scopes']);
    assert.deepEqual(body.api_key.scopes, ['*'], 'the first key can do everything, present and future');
    assert.equal(body.api_key.expires_at, null);
    assert.match(body.api_key.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
    assert.match(body.api_key.key, /^wum_/);
    assert.ok(body.api_key.key.length >= 4 + 43, 'at least 32 random bytes after the prefix');
    assert.ok(body.api_key.prefix.length > 0 && body.api_key.prefix.length < body.api_key.key.length);
    assert.ok(body.api_key.key.startsWith(body.api_key.prefix), 'prefix is a prefix of the key');
    assert.match(body.api_key.created_at, TIMESTAMP);

    const list = await external(subdomain, body.api_key.key);
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual(json<'listUsers'>(list).users, []);
    const added = await ctx.app.inject({
      method: 'POST',
      url: `${API}/users`,
      headers: { host: `${subdomain}.localhost`, 'x-api-key': body.api_key.key },
      payload: userBody('first@example.com'),
    });
    assert.equal(added.statusCode, 201, added.body);
  });

  test('each workspace gets its own distinct key; a key does not open another workspace', async () => {
    const a = await ctx.admin('POST', '/workspaces', { subdomain: unique() });
    const b = await ctx.admin('POST', '/workspaces', { subdomain: unique() });
    assert.notEqual(json<'createWorkspace'>(a).api_key.key, json<'createWorkspace'>(b).api_key.key);
    assert.notEqual(json<'createWorkspace'>(a).api_key.id, json<'createWorkspace'>(b).api_key.id);
    assertProblem(await external(json<'createWorkspace'>(a).subdomain, json<'createWorkspace'>(b).api_key.key), 401, 'invalid_api_key');
    assertProblem(await external(json<'createWorkspace'>(b).subdomain, json<'createWorkspace'>(a).api_key.key), 401, 'invalid_api_key');
  });

  test('name defaults to the subdomain', async () => {
    const subdomain = unique();
    const res = await ctx.admin('POST', '/workspaces', { subdomain });
    assert.equal(res.statusCode, 201);
    assert.equal(json<'createWorkspace'>(res).name, subdomain);
    assert.equal(json<'getWorkspace'>(await ctx.admin('GET', `/workspaces/${subdomain}`)).name, subdomain);
  });

  test('the subdomain is stored lower-cased and addressed case-insensitively', async () => {
    const upper = `ACME-X${process.pid}`;
    const res = await ctx.admin('POST', '/workspaces', { subdomain: upper });
    assert.equal(res.statusCode, 201, res.body);
    const lower = upper.toLowerCase();
    assert.equal(json<'createWorkspace'>(res).subdomain, lower);
    const fetched = await ctx.admin('GET', `/workspaces/${lower}`);
    assert.equal(fetched.statusCode, 200);
    assert.equal(json<'getWorkspace'>(fetched).subdomain, lower);
    assert.equal(json<'getWorkspace'>(await ctx.admin('GET', `/workspaces/${upper}`)).subdomain, lower);
    const viaHost = await ctx.app.inject({
      method: 'GET',
      url: `${API}/users`,
      headers: { host: `${upper}.LOCALHOST`, 'x-api-key': json<'createWorkspace'>(res).api_key.key },
    });
    assert.equal(viaHost.statusCode, 200, viaHost.body);
  });

  test('DNS labels of 1 and 63 characters with inner hyphens are accepted', async () => {
    for (const subdomain of ['q', `${'a'.repeat(31)}-${'b'.repeat(31)}`, `a-b--c${process.pid}`, '0day']) {
      const res = await ctx.admin('POST', '/workspaces', { subdomain });
      assert.equal(res.statusCode, 201, `${subdomain}: ${res.body}`);
      assert.equal(json<'createWorkspace'>(res).subdomain, subdomain);
    }
  });

  test('anything but a DNS label, a missing subdomain, or an unknown field → 400 validation_failed, nothing stored', async () => {
    const before = json<'listWorkspaces'>(await ctx.admin('GET', '/workspaces')).total_count;
    const bodies: unknown[] = [
      { subdomain: '' },
      { subdomain: '-a' },
      { subdomain: 'a-' },
      { subdomain: 'a_b' },
      { subdomain: 'a.b' },
      { subdomain: 'a b' },
      { subdomain: 'ü' },
      { subdomain: 'a'.repeat(64) },
      { subdomain: 123 },
      { subdomain: null },
      { subdomain: ['acme'] },
      {},
      { subdomain: unique(), extra: true },
      { subdomain: unique(), name: '' },
      { subdomain: unique(), name: 42 },
    ];
    for (const body of bodies) {
      const res = await ctx.admin('POST', '/workspaces', body);
      assertProblem(res, 400, 'validation_failed');
      assert.ok(Array.isArray(json<'Problem'>(res).errors) && json<'Problem'>(res).errors!.length > 0, JSON.stringify(body));
    }
    const unknownField = await ctx.admin('POST', '/workspaces', { subdomain: unique(), extra: true });
    assert.deepEqual(json<'Problem'>(unknownField).errors!.map((e: { field: string }) => e.field), ['extra']);
    const bad = await ctx.admin('POST', '/workspaces', { subdomain: 'a_b' });
    assert.deepEqual(json<'Problem'>(bad).errors!.map((e: { field: string }) => e.field), ['subdomain']);
    assert.equal(json<'listWorkspaces'>(await ctx.admin('GET', '/workspaces')).total_count, before);
  });

  test('a non-JSON or malformed body is refused with a problem', async () => {
    const text = await raw('POST', '/workspaces', { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' }, 'acme');
    assertProblem(text, 415, 'unsupported_media_type');
    const broken = await raw(
      'POST',
      '/workspaces',
      { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      '{"subdomain": ',
    );
    assertProblem(broken, 400, 'malformed_json');
  });

  test('a duplicate subdomain, also differing only in case → 409 workspace_exists; the first key still works', async () => {
    const subdomain = unique();
    const first = await ctx.admin('POST', '/workspaces', { subdomain, name: 'First' });
    assert.equal(first.statusCode, 201);
    assertProblem(await ctx.admin('POST', '/workspaces', { subdomain }), 409, 'workspace_exists');
    assertProblem(await ctx.admin('POST', '/workspaces', { subdomain: subdomain.toUpperCase(), name: 'Other' }), 409, 'workspace_exists');
    const fetched = await ctx.admin('GET', `/workspaces/${subdomain}`);
    assert.equal(json<'getWorkspace'>(fetched).name, 'First', 'the existing workspace is unchanged');
    assert.equal((await external(subdomain, json<'createWorkspace'>(first).api_key.key)).statusCode, 200);
  });

  test('paginated like users: envelope, totals, oldest first, empty page past the end', async () => {
    const created: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const subdomain = unique('list');
      assert.equal((await ctx.admin('POST', '/workspaces', { subdomain })).statusCode, 201);
      created.push(subdomain);
    }
    const all = await ctx.admin('GET', '/workspaces?page_size=100');
    assert.equal(all.statusCode, 200);
    const body = json<'listWorkspaces'>(all);
    assert.deepEqual(Object.keys(body).sort(), ['pagination', 'total_count', 'workspaces']);
    const total = body.total_count;
    assert.ok(total >= 3);
    assert.equal(body.pagination.total_records, total);
    assert.equal(body.pagination.current_page_number, 1);
    assert.equal(body.pagination.page_size, 100);
    assert.equal(body.pagination.total_pages, Math.ceil(total / 100));
    const names = body.workspaces.map((w: { subdomain: string }) => w.subdomain);
    assert.deepEqual(names.slice(-3), created, 'oldest first: the newest three come last, in creation order');
    for (const w of body.workspaces) {
      assert.deepEqual(Object.keys(w).sort(), ['created_at', 'name', 'subdomain']);
      assert.match(w.created_at, TIMESTAMP);
    }

    const lastPage = await ctx.admin('GET', `/workspaces?page_size=1&page_number=${total}`);
    assert.equal(lastPage.statusCode, 200);
    assert.deepEqual(json<'listWorkspaces'>(lastPage).workspaces.map((w: { subdomain: string }) => w.subdomain), [created[2]]);
    assert.deepEqual(json<'listWorkspaces'>(lastPage).pagination, {
      total_records: total,
      current_page_number: total,
      total_pages: total,
      page_size: 1,
    });
    assert.equal(json<'listWorkspaces'>(lastPage).total_count, total);
    assert.match(lastPage.headers.link as string, /rel="first"/);
    assert.match(lastPage.headers.link as string, /rel="prev"/);

    const second = await ctx.admin('GET', `/workspaces?page_size=1&page_number=${total - 1}`);
    assert.deepEqual(json<'listWorkspaces'>(second).workspaces.map((w: { subdomain: string }) => w.subdomain), [created[1]]);

    const past = await ctx.admin('GET', `/workspaces?page_size=1&page_number=${total + 1}`);
    assert.equal(past.statusCode, 200);
    assert.deepEqual(json<'listWorkspaces'>(past).workspaces, []);
    assert.equal(json<'listWorkspaces'>(past).total_count, total);

    const defaults = await ctx.admin('GET', '/workspaces');
    assert.equal(json<'listWorkspaces'>(defaults).pagination.page_size, 30);
    assert.equal(json<'listWorkspaces'>(defaults).pagination.current_page_number, 1);
  });

  test('the listing never shows API keys', async () => {
    const res = await ctx.admin('GET', '/workspaces?page_size=100');
    assert.doesNotMatch(res.body, /wum_/);
    assert.doesNotMatch(res.body, /api_key/);
  });

  test('invalid page parameters → 400 invalid_parameter naming the parameter', async () => {
    for (const [query, field] of [
      ['page_size=0', 'page_size'],
      ['page_size=101', 'page_size'],
      ['page_size=abc', 'page_size'],
      ['page_size=1.5', 'page_size'],
      ['page_size=10&page_size=20', 'page_size'],
      ['page_number=0', 'page_number'],
      ['page_number=-1', 'page_number'],
      ['page_number=x', 'page_number'],
    ]) {
      const res = await ctx.admin('GET', `/workspaces?${query}`);
      assertProblem(res, 400, 'invalid_parameter');
      assert.ok(
        json<'Problem'>(res).errors!.some((e: { field: string }) => e.field === field),
        `${query}: ${res.body}`,
      );
    }
  });

  test('GET returns the workspace; an unknown one → 404 workspace_not_found', async () => {
    const subdomain = unique();
    const created = json<'createWorkspace'>(await ctx.admin('POST', '/workspaces', { subdomain, name: 'Get Me' }));
    const res = await ctx.admin('GET', `/workspaces/${subdomain}`);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json<'getWorkspace'>(res), { subdomain, name: 'Get Me', created_at: created.created_at });
    assertProblem(await ctx.admin('GET', `/workspaces/no-such-${process.pid}`), 404, 'workspace_not_found');
  });

  test('DELETE → 204; afterwards its key gets 404 workspace_not_found, GET and a second DELETE 404', async () => {
    const ws = await ctx.createWorkspace('del');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('gone@example.com') })).statusCode, 201);
    const other = await ctx.createWorkspace('keep');
    assert.equal((await ctx.api(other, 'POST', '/users', { body: userBody('kept@example.com') })).statusCode, 201);

    const res = await ctx.admin('DELETE', `/workspaces/${ws.subdomain}`);
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');

    assertProblem(await ctx.api(ws, 'GET', '/users'), 404, 'workspace_not_found');
    assertProblem(await ctx.api(ws, 'POST', '/users', { body: userBody('again@example.com') }), 404, 'workspace_not_found');
    assertProblem(await ctx.admin('GET', `/workspaces/${ws.subdomain}`), 404, 'workspace_not_found');
    assertProblem(await ctx.admin('DELETE', `/workspaces/${ws.subdomain}`), 404, 'workspace_not_found');
    assertProblem(await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`), 404, 'workspace_not_found');
    const listed = json<'listWorkspaces'>(await ctx.admin('GET', '/workspaces?page_size=100')).workspaces;
    assert.ok(!listed.some((w: { subdomain: string }) => w.subdomain === ws.subdomain));

    const kept = await ctx.api(other, 'GET', '/users/kept@example.com');
    assert.equal(kept.statusCode, 200, 'other workspaces are untouched');
  });

  test('a deleted subdomain can be created again, empty, with a new key; the old key stays dead', async () => {
    const ws = await ctx.createWorkspace('reuse');
    await ctx.api(ws, 'POST', '/users', { body: userBody('old@example.com') });
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}`)).statusCode, 204);
    const again = await ctx.admin('POST', '/workspaces', { subdomain: ws.subdomain });
    assert.equal(again.statusCode, 201, again.body);
    assertProblem(await external(ws.subdomain, ws.apiKey), 401, 'invalid_api_key');
    const list = await external(ws.subdomain, json<'createWorkspace'>(again).api_key.key, 'GET', '/users?status=all');
    assert.equal(list.statusCode, 200);
    assert.equal(json<'listUsers'>(list).total_count, 0);
  });

  test('DELETE of an unknown workspace → 404 workspace_not_found', async () => {
    assertProblem(await ctx.admin('DELETE', `/workspaces/never-${process.pid}`), 404, 'workspace_not_found');
  });

  test('an unsupported method → 405 method_not_allowed with Allow', async () => {
    const res = await ctx.admin('PUT', `/workspaces/x-${process.pid}`, { name: 'x' });
    assertProblem(res, 405, 'method_not_allowed');
    assert.match(res.headers.allow as string, /DELETE/);
    assert.match(res.headers.allow as string, /GET/);
  });
});
