import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Every request with a wrong key counts against the per-address limit of failed keys (20 a
 * minute by default), so this file keeps its invalid-key requests well under that.
 */

function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
  assert.equal(res.statusCode, status, res.body);
  assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
  assert.equal(json<'Problem'>(res).code, code);
  assert.equal(json<'Problem'>(res).status, status);
}

function randomKey(): string {
  return `wum_${randomBytes(32).toString('base64url')}`;
}

describe(`addressing, authentication and the order of checks [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  let other: TestWorkspace;

  /** A request to the external API with exactly these headers (no defaults). */
  function raw(
    method: InjectOptions['method'],
    path: string,
    headers: Record<string, string>,
    payload?: string | object,
    app: FastifyInstance = ctx.app,
  ): Promise<LightMyRequestResponse> {
    return app.inject({ method, url: `${API}${path}`, headers, ...(payload === undefined ? {} : { payload }) });
  }

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('tenant');
    other = await ctx.createWorkspace('other');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('resident@example.com') })).statusCode, 201);
  });
  after(() => ctx.close());

  test('the Host is matched case-insensitively and its port is ignored', async () => {
    const hosts = [
      `${ws.subdomain}.localhost:3000`,
      `${ws.subdomain.toUpperCase()}.LOCALHOST:3000`,
      `${ws.subdomain}.LocalHost`,
      `${ws.subdomain}.localhost:8443`,
    ];
    for (const host of hosts) {
      const res = await raw('GET', '/users', { host, 'x-api-key': ws.apiKey });
      assert.equal(res.statusCode, 200, host);
      assert.deepEqual(json<'listUsers'>(res).users.map((u) => u.email), ['resident@example.com'], host);
    }
  });

  test('a host that is not exactly <workspace>.<base domain> → 404 workspace_not_found, even with a valid key', async () => {
    const hosts = [
      'localhost:3000',
      'localhost',
      `x.${ws.subdomain}.localhost:3000`,
      `${ws.subdomain}.example.com`,
      `${ws.subdomain}.localhost.example.com`,
      `${ws.subdomain}localhost`,
      '127.0.0.1:3000',
      '[::1]:3000',
    ];
    for (const host of hosts) {
      const res = await raw('GET', '/users', { host, 'x-api-key': ws.apiKey });
      assertProblem(res, 404, 'workspace_not_found');
    }
  });

  test('an unknown workspace → 404 workspace_not_found, with or without a key, before anything else', async () => {
    const host = `nosuch-${randomBytes(3).toString('hex')}.localhost:3000`;
    assertProblem(await raw('GET', '/users', { host }), 404, 'workspace_not_found');
    assertProblem(await raw('GET', '/users', { host, 'x-api-key': ws.apiKey }), 404, 'workspace_not_found');
    assertProblem(await raw('GET', '/products', { host, 'x-api-key': '' }), 404, 'workspace_not_found');
    assertProblem(await raw('GET', '/no/such/path', { host }), 404, 'workspace_not_found');
    assertProblem(await raw('PUT', '/users', { host }), 404, 'workspace_not_found');
    assertProblem(await raw('GET', '/users?page_size=0', { host }), 404, 'workspace_not_found');
    assertProblem(
      await raw('POST', '/users', { host, 'content-type': 'text/plain' }, 'not json'),
      404,
      'workspace_not_found',
    );
  });

  test('a missing, empty or blank X-Api-Key → 401 missing_api_key', async () => {
    assertProblem(await raw('GET', '/users', { host: ws.host }), 401, 'missing_api_key');
    assertProblem(await raw('GET', '/users', { host: ws.host, 'x-api-key': '' }), 401, 'missing_api_key');
    assertProblem(await raw('GET', '/users', { host: ws.host, 'x-api-key': '   ' }), 401, 'missing_api_key');
    assertProblem(await raw('DELETE', '/users/resident@example.com', { host: ws.host }), 401, 'missing_api_key');
    assertProblem(
      await raw('POST', '/users', { host: ws.host, 'content-type': 'application/json' }, userBody('new@example.com')),
      401,
      'missing_api_key',
    );
    assert.equal((await ctx.api(ws, 'GET', '/users/new%40example.com')).statusCode, 404, 'nothing was added');
  });

  test("another workspace's key, a revoked key and an unknown key all → the same 401 invalid_api_key", async () => {
    const extra = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`);
    assert.equal(extra.statusCode, 201, extra.body);
    const { id, key } = json<'createApiKey'>(extra);
    assert.equal((await raw('GET', '/users', { host: ws.host, 'x-api-key': key })).statusCode, 200, 'the new key works');
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${id}`)).statusCode, 204);

    const foreign = await raw('GET', '/users', { host: ws.host, 'x-api-key': other.apiKey });
    const revoked = await raw('GET', '/users', { host: ws.host, 'x-api-key': key });
    const unknown = await raw('GET', '/users', { host: ws.host, 'x-api-key': randomKey() });
    for (const res of [foreign, revoked, unknown]) assertProblem(res, 401, 'invalid_api_key');
    const shapes = [foreign, revoked, unknown].map((r) => {
      const { title, detail, type, code, status } = json<'Problem'>(r);
      return { title, detail, type, code, status };
    });
    assert.deepEqual(shapes[1], shapes[0]);
    assert.deepEqual(shapes[2], shapes[0]);
    assert.equal((await ctx.api(ws, 'GET', '/users')).statusCode, 200, "the workspace's first key still works");
  });

  test('rotation: two live keys at once, then the old one revoked', async () => {
    const rot = await ctx.createWorkspace('rotate');
    const created = await ctx.admin('POST', `/workspaces/${rot.subdomain}/api-keys`);
    const newKey = json<'createApiKey'>(created).key;
    assert.equal((await raw('GET', '/users', { host: rot.host, 'x-api-key': rot.apiKey })).statusCode, 200);
    assert.equal((await raw('GET', '/users', { host: rot.host, 'x-api-key': newKey })).statusCode, 200);
    assert.equal((await ctx.admin('DELETE', `/workspaces/${rot.subdomain}/api-keys/${rot.apiKeyId}`)).statusCode, 204);
    assertProblem(await raw('GET', '/users', { host: rot.host, 'x-api-key': rot.apiKey }), 401, 'invalid_api_key');
    assert.equal((await raw('GET', '/users', { host: rot.host, 'x-api-key': newKey })).statusCode, 200);
  });

  test('an unknown path under the API: 404 not_found with a valid key, but 401 without one (auth first)', async () => {
    assertProblem(await ctx.api(ws, 'GET', '/no-such-thing'), 404, 'not_found');
    assertProblem(await ctx.api(ws, 'POST', '/users/resident@example.com/extra'), 404, 'not_found');
    assertProblem(await ctx.api(ws, 'GET', '/no-such-thing', { noKey: true }), 401, 'missing_api_key');
    assertProblem(await raw('GET', '/no-such-thing', { host: ws.host, 'x-api-key': randomKey() }), 401, 'invalid_api_key');
  });

  test('a known path with a wrong method → 405 method_not_allowed with Allow; without a key → 401', async () => {
    const cases: [InjectOptions['method'], string, string[]][] = [
      ['PUT', '/users', ['GET', 'POST']],
      ['DELETE', '/users', ['GET', 'POST']],
      ['PATCH', '/users', ['GET', 'POST']],
      ['PUT', '/users/resident@example.com', ['GET', 'PATCH', 'DELETE']],
      ['POST', '/users/resident@example.com', ['GET', 'PATCH', 'DELETE']],
      ['POST', '/products', ['GET']],
      ['DELETE', '/products', ['GET']],
    ];
    for (const [method, path, allowed] of cases) {
      const res = await ctx.api(ws, method, path);
      assertProblem(res, 405, 'method_not_allowed');
      const allow = (res.headers.allow as string).split(/,\s*/);
      for (const m of allowed) assert.ok(allow.includes(m), `${method} ${path}: Allow ${res.headers.allow} has ${m}`);
      assert.ok(!allow.includes(method as string), `${method} ${path}: Allow does not list ${method}`);
      assertProblem(await ctx.api(ws, method, path, { noKey: true }), 401, 'missing_api_key');
    }
    assert.equal(json<'getUser'>(await ctx.api(ws, 'GET', '/users/resident@example.com')).status, 'active', 'PUT/POST changed nothing');
  });

  test('order of checks on POST /users: key → method → media type → JSON syntax → validation → domain rules', async () => {
    const headers = (ct: string, withKey = true) => ({
      host: ws.host,
      'content-type': ct,
      ...(withKey ? { 'x-api-key': ws.apiKey } : {}),
    });
    assertProblem(await raw('POST', '/users', headers('text/plain', false), 'not json'), 401, 'missing_api_key');
    assertProblem(await raw('POST', '/users', headers('application/json', false), '{"user": '), 401, 'missing_api_key');
    assertProblem(await raw('POST', '/users', headers('application/json', false), `"${'x'.repeat(70_000)}"`), 401, 'missing_api_key');
    assertProblem(await raw('PUT', '/users', headers('text/plain'), 'not json'), 405, 'method_not_allowed');
    assertProblem(await raw('POST', '/users', headers('text/plain'), '{"user": {}}'), 415, 'unsupported_media_type');
    assertProblem(await raw('POST', '/users', headers('application/json'), '{"user": '), 400, 'malformed_json');
    assertProblem(
      await raw('POST', '/users', headers('application/json'), {
        user: { email: 'resident@example.com', role: 'boss', apps: [{ name: 'nope', role: 'x' }] },
      }),
      400,
      'validation_failed',
    );
    assertProblem(
      await raw('POST', '/users', headers('application/json'), userBody('resident@example.com', { apps: [{ name: 'nope', role: 'x' }] })),
      422,
      'unknown_product',
    );
    assertProblem(await raw('POST', '/users', headers('application/json'), userBody('resident@example.com')), 409, 'user_already_exists');
  });

  test('order of checks on GET /users: a bad query without a key → 401, with a key → 400', async () => {
    assertProblem(await ctx.api(ws, 'GET', '/users?page_size=0', { noKey: true }), 401, 'missing_api_key');
    assertProblem(await ctx.api(ws, 'GET', '/users?page_size=0'), 400, 'invalid_parameter');
  });

  test('X-Forwarded-Host is ignored by default', async () => {
    const unknownHost = `nosuch-${randomBytes(3).toString('hex')}.localhost`;
    assertProblem(
      await raw('GET', '/users', { host: unknownHost, 'x-forwarded-host': ws.host, 'x-api-key': ws.apiKey }),
      404,
      'workspace_not_found',
    );
    const res = await raw('GET', '/users', { host: ws.host, 'x-forwarded-host': other.host, 'x-api-key': ws.apiKey });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(json<'listUsers'>(res).users.map((u) => u.email), ['resident@example.com']);
    assert.ok((res.headers.link as string).includes(`//${ws.host}/`), 'links use the Host, not the forwarded host');
  });

  test('X-Forwarded-Host is honoured when TRUST_PROXY is set', async () => {
    const proxied = await ctx.buildApp({ TRUST_PROXY: 'true' });
    const res = await raw('GET', '/users', { host: '10.0.0.7:8080', 'x-forwarded-host': ws.host, 'x-api-key': ws.apiKey }, undefined, proxied);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(json<'listUsers'>(res).users.map((u) => u.email), ['resident@example.com']);
    assertProblem(
      await raw('GET', '/users', { host: ws.host, 'x-forwarded-host': 'localhost', 'x-api-key': ws.apiKey }, undefined, proxied),
      404,
      'workspace_not_found',
    );
    assertProblem(
      await raw('GET', '/users', { host: ws.host, 'x-forwarded-host': other.host, 'x-api-key': ws.apiKey }, undefined, proxied),
      401,
      'invalid_api_key',
    );
    const https = await raw(
      'GET',
      '/users',
      { host: '10.0.0.7:8080', 'x-forwarded-host': ws.host, 'x-forwarded-proto': 'https', 'x-api-key': ws.apiKey },
      undefined,
      proxied,
    );
    assert.ok((https.headers.link as string).includes(`<https://${ws.host}/`), `links name the public address: ${https.headers.link}`);
  });

  describe('isolation between workspaces', () => {
    let a: TestWorkspace;
    let b: TestWorkspace;

    before(async () => {
      a = await ctx.createWorkspace('iso-a');
      b = await ctx.createWorkspace('iso-b');
      const created = await ctx.api(a, 'POST', '/users', {
        body: userBody('shared@example.com', { role: 'owner', first_name: 'InA', apps: [{ name: 'crm', role: 'admin' }] }),
      });
      assert.equal(created.statusCode, 201);
    });

    test("A's user is invisible to B: GET 404, list excludes it, DELETE 404", async () => {
      assertProblem(await ctx.api(b, 'GET', '/users/shared%40example.com'), 404, 'user_not_found');
      const list = await ctx.api(b, 'GET', '/users', { query: { status: 'all' } });
      assert.equal(json<'listUsers'>(list).total_count, 0);
      assert.deepEqual(json<'listUsers'>(list).users, []);
      assertProblem(await ctx.api(b, 'DELETE', '/users/shared%40example.com'), 404, 'user_not_found');
      const inA = await ctx.api(a, 'GET', '/users/shared%40example.com');
      assert.equal(json<'getUser'>(inA).status, 'active', "B's DELETE did not touch A's user");
    });

    test("A's key cannot reach A's data through B's host", async () => {
      assertProblem(
        await raw('GET', '/users/shared%40example.com', { host: b.host, 'x-api-key': a.apiKey }),
        401,
        'invalid_api_key',
      );
    });

    test('the same email in B is a separate user; changes to one never reach the other', async () => {
      const inB = await ctx.api(b, 'POST', '/users', {
        body: userBody('SHARED@example.com', { first_name: 'InB', apps: [{ name: 'helpdesk', role: 'agent' }] }),
      });
      assert.equal(inB.statusCode, 201, 'not 409: the email is taken only in A');
      assert.equal(json<'addUser'>(inB).first_name, 'InB');

      const userA = json<'getUser'>(await ctx.api(a, 'GET', '/users/shared%40example.com'));
      assert.equal(userA.email, 'shared@example.com');
      assert.equal(userA.first_name, 'InA');
      assert.equal(userA.role, 'owner');
      assert.deepEqual(userA.apps, [{ name: 'crm', role: 'admin' }]);

      assert.equal((await ctx.api(b, 'DELETE', '/users/shared%40example.com')).statusCode, 204, "B's user is not A's last owner");
      assert.equal(json<'getUser'>(await ctx.api(a, 'GET', '/users/shared%40example.com')).status, 'active');
      assert.equal(json<'getUser'>(await ctx.api(b, 'GET', '/users/shared%40example.com')).status, 'deactivated');
      assert.equal(json<'listUsers'>(await ctx.api(a, 'GET', '/users')).total_count, 1);
      assertProblem(await ctx.api(a, 'DELETE', '/users/shared%40example.com'), 409, 'last_owner');
    });
  });
});
