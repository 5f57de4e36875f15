import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

const PROBLEM_MEMBERS = ['code', 'detail', 'request_id', 'status', 'title', 'type'];

/** Checks the RFC 9457 shape of an error response and returns its body. */
function assertProblem(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  assert.equal(res.statusCode, status, res.body);
  assert.match(res.headers['content-type'] as string, /^application\/problem\+json(;|$)/);
  const body = json<'Problem'>(res);
  const keys = Object.keys(body).sort();
  for (const member of PROBLEM_MEMBERS) assert.ok(keys.includes(member), `${code}: has ${member}`);
  assert.deepEqual(
    keys.filter((k) => !PROBLEM_MEMBERS.includes(k)),
    'errors' in body ? ['errors'] : [],
    `${code}: no other members (no stack)`,
  );
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  for (const member of ['type', 'title', 'detail', 'request_id'] as const) {
    assert.equal(typeof body[member], 'string', `${code}: ${member} is a string`);
    assert.ok(body[member].length > 0, `${code}: ${member} is not empty`);
  }
  assert.equal(body.request_id, res.headers['x-request-id'], `${code}: request_id is the X-Request-Id`);
  assert.doesNotMatch(res.body, /\bat .+\(.*:\d+:\d+\)|node_modules|\.ts:\d+/, `${code}: no stack trace`);
  if ('errors' in body) {
    assert.ok(Array.isArray(body.errors));
    for (const e of body.errors) {
      assert.deepEqual(Object.keys(e).sort(), ['field', 'message']);
    }
  }
  return body;
}

describe(`errors, request ids and operations endpoints [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace();
    await ctx.api(ws, 'POST', '/users', { body: userBody('owner@example.com', { role: 'owner' }) });
  });
  after(() => ctx.close());

  describe('every error is RFC 9457 problem+json', () => {
    test('400 invalid_parameter and validation_failed carry errors[] with field and message', async () => {
      const query = assertProblem(await ctx.api(ws, 'GET', '/users', { query: { page_size: '0' } }), 400, 'invalid_parameter');
      assert.equal((query.errors as { field: string }[])[0]!.field, 'page_size');
      const body = assertProblem(
        await ctx.api(ws, 'POST', '/users', { body: { user: { email: 'x', role: 'owner', apps: [] } } }),
        400,
        'validation_failed',
      );
      assert.equal((body.errors as { field: string }[])[0]!.field, 'user.email');
    });

    test('400 malformed_json', async () => {
      assertProblem(
        await ctx.api(ws, 'POST', '/users', { body: '{"user":', headers: { 'content-type': 'application/json' } }),
        400,
        'malformed_json',
      );
      assertProblem(
        await ctx.api(ws, 'POST', '/users', { body: '', headers: { 'content-type': 'application/json' } }),
        400,
        'malformed_json',
      );
    });

    test('400 for a URL that is not validly percent-encoded (the router refuses it)', async () => {
      assertProblem(await ctx.api(ws, 'GET', '/users/%E0%A4%A'), 400, 'bad_request');
      assertProblem(await ctx.api(ws, 'DELETE', '/users/%zz'), 400, 'bad_request');
      assertProblem(await ctx.app.inject({ method: 'GET', url: '/elsewhere/%zz' }), 400, 'bad_request');
    });

    test('401 missing_api_key and invalid_api_key', async () => {
      assertProblem(await ctx.api(ws, 'GET', '/users', { noKey: true }), 401, 'missing_api_key');
      assertProblem(await ctx.api(ws, 'GET', '/users', { headers: { 'x-api-key': 'wum_not-a-real-key' } }), 401, 'invalid_api_key');
    });

    test('404 workspace_not_found, user_not_found, not_found (API path and any other path)', async () => {
      assertProblem(
        await ctx.app.inject({ method: 'GET', url: `${API}/users`, headers: { host: 'nope-zz.localhost', 'x-api-key': ws.apiKey } }),
        404,
        'workspace_not_found',
      );
      assertProblem(await ctx.api(ws, 'GET', '/users/nobody%40example.com'), 404, 'user_not_found');
      assertProblem(await ctx.api(ws, 'GET', '/nothing-here'), 404, 'not_found');
      assertProblem(await ctx.app.inject({ method: 'GET', url: '/no/such/page', headers: { accept: 'text/html' } }), 404, 'not_found');
      assertProblem(await ctx.app.inject({ method: 'GET', url: '/' }), 404, 'not_found');
    });

    test('405 method_not_allowed with Allow', async () => {
      const res = await ctx.api(ws, 'PUT', '/users');
      assertProblem(res, 405, 'method_not_allowed');
      assert.ok((res.headers.allow as string).length > 0);
      const ops = await ctx.app.inject({ method: 'POST', url: '/healthz' });
      assertProblem(ops, 405, 'method_not_allowed');
      assert.match(ops.headers.allow as string, /\bGET\b/);
    });

    test('409 user_already_exists and last_owner', async () => {
      assertProblem(await ctx.api(ws, 'POST', '/users', { body: userBody('owner@example.com') }), 409, 'user_already_exists');
      assertProblem(await ctx.api(ws, 'DELETE', '/users/owner@example.com'), 409, 'last_owner');
    });

    test('413 payload_too_large', async () => {
      const res = await ctx.api(ws, 'POST', '/users', {
        body: JSON.stringify(userBody('big@example.com', { first_name: 'x'.repeat(70_000) })),
        headers: { 'content-type': 'application/json' },
      });
      assertProblem(res, 413, 'payload_too_large');
    });

    test('415 unsupported_media_type', async () => {
      assertProblem(
        await ctx.api(ws, 'POST', '/users', { body: 'user=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
        415,
        'unsupported_media_type',
      );
      assertProblem(
        await ctx.api(ws, 'POST', '/users', { body: 'hello', headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      );
    });

    test('422 unknown_product and unknown_product_role', async () => {
      const product = assertProblem(
        await ctx.api(ws, 'POST', '/users', { body: userBody('p@example.com', { apps: [{ name: 'nope', role: 'x' }] }) }),
        422,
        'unknown_product',
      );
      assert.equal((product.errors as { field: string }[])[0]!.field, 'user.apps[0].name');
      assertProblem(
        await ctx.api(ws, 'POST', '/users', { body: userBody('p@example.com', { apps: [{ name: 'crm', role: 'nope' }] }) }),
        422,
        'unknown_product_role',
      );
    });

    test('one code always has the same title and type', async () => {
      const a = assertProblem(await ctx.api(ws, 'GET', '/users/a%40example.com'), 404, 'user_not_found');
      const b = assertProblem(await ctx.api(ws, 'DELETE', '/users/b%40example.com'), 404, 'user_not_found');
      assert.equal(a.title, b.title);
      assert.equal(a.type, b.type);
    });
  });

  describe('X-Request-Id', () => {
    test('is on every response: success, error, unknown path, operations, docs', async () => {
      const responses = [
        await ctx.api(ws, 'GET', '/users'),
        await ctx.api(ws, 'POST', '/users', { body: userBody(`rid-${Date.now()}@example.com`) }),
        await ctx.api(ws, 'DELETE', '/users/nobody@example.com'),
        await ctx.api(ws, 'GET', '/users', { noKey: true }),
        await ctx.api(ws, 'GET', '/nothing'),
        await ctx.app.inject({ method: 'GET', url: '/nothing' }),
        await ctx.app.inject({ method: 'GET', url: '/healthz' }),
        await ctx.app.inject({ method: 'GET', url: '/readyz' }),
        await ctx.app.inject({ method: 'GET', url: '/metrics' }),
        await ctx.app.inject({ method: 'GET', url: `${API}/openapi.json` }),
        await ctx.app.inject({ method: 'GET', url: '/docs' }),
        await ctx.app.inject({ method: 'GET', url: '/docs/' }),
      ];
      const ids = responses.map((r) => r.headers['x-request-id']);
      for (const [i, id] of ids.entries()) {
        assert.equal(typeof id, 'string', `response ${i} (${responses[i]!.statusCode})`);
        assert.match(id as string, /^\S{8,128}$/);
      }
      assert.equal(new Set(ids).size, ids.length, 'generated ids are unique');
    });

    test('a sane incoming id is echoed, in the header and in the problem body', async () => {
      const ok = await ctx.api(ws, 'GET', '/users', { headers: { 'x-request-id': 'abc-123' } });
      assert.equal(ok.statusCode, 200);
      assert.equal(ok.headers['x-request-id'], 'abc-123');
      const failed = await ctx.api(ws, 'GET', '/users/nobody%40example.com', { headers: { 'x-request-id': 'trace.42:x/y' } });
      assert.equal(failed.headers['x-request-id'], 'trace.42:x/y');
      assert.equal(json<'Problem'>(failed).request_id, 'trace.42:x/y');
      const unauth = await ctx.api(ws, 'GET', '/users', { noKey: true, headers: { 'x-request-id': 'abc-123' } });
      assert.equal(json<'Problem'>(unauth).request_id, 'abc-123');
      const uuid = '6f1c1a52-6f0c-4a53-9f1e-6a1d9f0b6a11';
      assert.equal((await ctx.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': uuid } })).headers['x-request-id'], uuid);
    });

    test('an insane incoming id (spaces, too long, control characters, empty) is replaced by a generated one', async () => {
      for (const incoming of ['has spaces in it', 'a'.repeat(300), 'line\u0001break', '<script>', '']) {
        const res = await ctx.api(ws, 'GET', '/users/nobody%40example.com', { headers: { 'x-request-id': incoming } });
        const id = res.headers['x-request-id'];
        assert.equal(typeof id, 'string');
        assert.notEqual(id, incoming);
        assert.match(id as string, /^[A-Za-z0-9-]{8,128}$/);
        assert.equal(json<'Problem'>(res).request_id, id);
      }
    });
  });

  describe('operations endpoints', () => {
    test('GET /healthz → 200 on any host, without a key', async () => {
      for (const host of ['localhost:3000', ws.host, 'anything.example.com']) {
        const res = await ctx.app.inject({ method: 'GET', url: '/healthz', headers: { host } });
        assert.equal(res.statusCode, 200, host);
      }
    });

    test('GET /readyz → 200 while the database answers', async () => {
      const res = await ctx.app.inject({ method: 'GET', url: '/readyz', headers: { host: ws.host } });
      assert.equal(res.statusCode, 200);
    });

    test('GET /metrics → Prometheus text with request counters and durations by route template', async () => {
      const email = 'metrics-probe-7f3a@example.com';
      await ctx.api(ws, 'GET', `/users/${encodeURIComponent(email)}`);
      await ctx.api(ws, 'DELETE', `/users/${email}`);
      await ctx.api(ws, 'GET', '/users');
      await ctx.api(ws, 'GET', '/unrouted-probe-7f3a');
      await ctx.app.inject({ method: 'GET', url: '/elsewhere-probe-7f3a' });
      // On the operator host (a workspace's host answers 404: test/http/operator-surface.test.ts).
      const res = await ctx.app.inject({ method: 'GET', url: '/metrics', headers: { host: 'localhost:3000' } });
      assert.equal(res.statusCode, 200);
      assert.match(res.headers['content-type'] as string, /^text\/plain/);
      const lines = res.body.split('\n');
      const counters = lines.filter((l) => l.startsWith('http_requests_total{'));
      const buckets = lines.filter((l) => l.startsWith('http_request_duration_seconds_bucket{'));
      assert.ok(res.body.includes('# TYPE http_requests_total counter'));
      assert.ok(res.body.includes('# TYPE http_request_duration_seconds histogram'));
      const labelled = (l: string, method: string, route: string, status: string) =>
        l.includes(`method="${method}"`) && l.includes(`route="${route}"`) && l.includes(`status_code="${status}"`);
      assert.ok(counters.some((l) => labelled(l, 'GET', `${API}/users/:email`, '404')), 'GET /users/:email 404 counted');
      assert.ok(counters.some((l) => labelled(l, 'DELETE', `${API}/users/:email`, '404')), 'DELETE /users/:email 404 counted');
      assert.ok(counters.some((l) => labelled(l, 'GET', `${API}/users`, '200')), 'GET /users 200 counted');
      assert.ok(buckets.some((l) => labelled(l, 'GET', `${API}/users`, '200')), 'durations by the same labels');
      assert.ok(!res.body.includes('metrics-probe-7f3a'), 'no raw email in any label');
      assert.ok(!res.body.includes('probe-7f3a'), 'no raw path of an unknown route in any label');
      const count = (l: string | undefined) => Number(l?.split(' ').at(-1));
      const before = count(counters.find((l) => labelled(l, 'GET', `${API}/users`, '200')));
      await ctx.api(ws, 'GET', '/users');
      const again = (await ctx.app.inject({ method: 'GET', url: '/metrics' })).body.split('\n');
      const after = count(again.find((l) => l.startsWith('http_requests_total{') && labelled(l, 'GET', `${API}/users`, '200')));
      assert.equal(after, before + 1, 'the counter counts');
    });

    test('GET /api/external/v2/openapi.json → 200 OpenAPI 3.1 without a key or a workspace host', async () => {
      for (const headers of [{}, { host: 'localhost:3000' }, { host: ws.host }]) {
        const res = await ctx.app.inject({ method: 'GET', url: `${API}/openapi.json`, headers });
        assert.equal(res.statusCode, 200, JSON.stringify(headers));
        assert.match(res.headers['content-type'] as string, /^application\/json/);
        const doc = json<{ openapi: string; paths: Record<string, Record<string, object>> }>(res);
        assert.equal(doc.openapi, '3.1.0');
        assert.ok(doc.paths[`${API}/users`], 'has the users collection');
        assert.ok(doc.paths[`${API}/users`]?.get && doc.paths[`${API}/users`]?.post);
        assert.ok(doc.paths[`${API}/users/{email}`]?.delete, 'has DELETE /users/{email}');
        assert.ok(doc.paths[`${API}/products`]?.get, 'has GET /products');
      }
    });

    test('GET /docs (following the redirect) → an HTML page', async () => {
      let res = await ctx.app.inject({ method: 'GET', url: '/docs' });
      for (let hops = 0; res.statusCode >= 300 && res.statusCode < 400 && hops < 3; hops += 1) {
        const location = res.headers.location as string;
        assert.ok(location, 'a redirect names its target');
        res = await ctx.app.inject({ method: 'GET', url: new URL(location, 'http://localhost/').pathname });
      }
      assert.equal(res.statusCode, 200);
      assert.match(res.headers['content-type'] as string, /^text\/html/);
      assert.match(res.body, /<html/i);
    });
  });
});
