import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * The operator's surface stays on the operator host (docs/security.md, "Hardening controls";
 * docs/operations.md, "Health, metrics, logs"): `/metrics` answers there, and on a workspace's
 * host only with METRICS_TOKEN, else 404 as a path that does not exist; the OpenAPI document a
 * workspace's host serves lists only what that host serves.
 */
describe(`the operator surface is not shown on workspace hosts [${BACKEND}]`, () => {
  const METRICS_TOKEN = 'metrics-token-for-the-scraper-only';
  let ctx: TestContext;
  let app: FastifyInstance;
  let ws: TestWorkspace;

  before(async () => {
    ctx = await createTestContext();
    ws = await ctx.createWorkspace('surface');
    app = await ctx.buildApp({ METRICS_TOKEN });
  });
  after(() => ctx.close());

  const metrics = (target: FastifyInstance, host: string, headers: Record<string, string> = {}, method: 'GET' | 'POST' = 'GET') =>
    target.inject({ method, url: '/metrics', headers: { host, ...headers } });

  test('/metrics on a workspace host → 404 not_found like an unknown path, whatever the method or a wrong token', async () => {
    const unknown = await app.inject({ method: 'GET', url: '/no-such-path', headers: { host: ws.host } });
    for (const [target, headers, method] of [
      [app, {}, 'GET'],
      [app, { authorization: 'Bearer wrong-token-of-the-same-length' }, 'GET'],
      [app, { authorization: METRICS_TOKEN }, 'GET'],
      [app, {}, 'POST'],
      [ctx.app, {}, 'GET'],
      [ctx.app, { authorization: `Bearer ${METRICS_TOKEN}` }, 'GET'],
    ] as const) {
      for (const host of [ws.host, 'no-such-workspace.localhost:3000', ws.host.toUpperCase()]) {
        const res = await metrics(target, host, headers, method);
        assert.equal(res.statusCode, 404, `${method} ${host} ${JSON.stringify(headers)}: ${res.body}`);
        assert.equal(json<'Problem'>(res).code, 'not_found');
        assert.equal(res.headers['content-type'], unknown.headers['content-type']);
        assert.doesNotMatch(res.body, /http_requests_total|admin/);
      }
    }
  });

  test('/metrics on a workspace host with Authorization: Bearer METRICS_TOKEN → 200', async () => {
    const res = await metrics(app, ws.host, { authorization: `Bearer ${METRICS_TOKEN}` });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /^# TYPE http_requests_total counter$/m);
  });

  test('/metrics on the operator host → 200 without a credential (the contract\'s behaviour kept there)', async () => {
    for (const target of [app, ctx.app]) {
      for (const host of ['localhost:3000', '127.0.0.1:3000', '[::1]:3000', 'localhost']) {
        const res = await metrics(target, host);
        assert.equal(res.statusCode, 200, host);
        assert.match(res.headers['content-type'] as string, /^text\/plain/);
      }
    }
  });

  /** The OpenAPI document as `host` serves it at `url` (following the viewer's redirects). */
  async function documentAt(host: string, url: string): Promise<{ paths: Record<string, unknown>; tags?: Array<{ name: string }>; components: { securitySchemes: Record<string, unknown> } }> {
    const res = await ctx.app.inject({ method: 'GET', url, headers: { host } });
    assert.equal(res.statusCode, 200, `${host} ${url}: ${res.body.slice(0, 200)}`);
    return res.json();
  }

  test('the OpenAPI document on a workspace host has no /admin/v1 path, tag or token scheme; on the operator host it has them', async () => {
    for (const url of ['/docs/json', `${API}/openapi.json`]) {
      const onWorkspace = await documentAt(ws.host, url);
      const adminPaths = Object.keys(onWorkspace.paths).filter((path) => path.startsWith('/admin'));
      assert.deepEqual(adminPaths, [], url);
      assert.ok(onWorkspace.paths[`${API}/users`], `${url}: the external API is listed`);
      assert.ok(!onWorkspace.tags?.some((tag) => tag.name === 'admin'), url);
      assert.equal(onWorkspace.components.securitySchemes.adminToken, undefined, url);
      assert.doesNotMatch(JSON.stringify(onWorkspace), /\/admin\/v1|\/console\/operator/, url);

      const onOperatorHost = await documentAt('localhost:3000', url);
      assert.ok(onOperatorHost.paths['/admin/v1/workspaces'], `${url}: the operator host lists the admin API`);
      assert.ok(onOperatorHost.paths[`${API}/users`], url);
      assert.ok(onOperatorHost.components.securitySchemes.adminToken, url);
    }
  });

  test('the document says how a client reaches each operation: the operator API on the operator host, bodies it may omit, PATCH\'s media types', async () => {
    type Operation = { servers?: Array<{ url: string; variables?: Record<string, { default: string }> }>; requestBody?: { required?: boolean; content: Record<string, unknown> } };
    const document = (await documentAt('localhost:3000', `${API}/openapi.json`)) as unknown as { servers: Array<{ url: string }>; paths: Record<string, Record<string, Operation>> };
    const operation = (path: string, method: string): Operation => {
      const found = document.paths[path]?.[method];
      assert.ok(found, `${method} ${path} is in the document`);
      return found;
    };
    // A server URL resolved with its variables' defaults, as a generated client does.
    const resolved = (server: { url: string; variables?: Record<string, { default: string }> }) =>
      server.url.replace(/\{(\w+)\}/g, (_, name: string) => server.variables?.[name]?.default ?? name);
    for (const [path, method] of [['/admin/v1/workspaces', 'post'], ['/admin/v1/workspaces/{subdomain}/api-keys', 'post'], ['/admin/v1/audit-events', 'get']] as const) {
      const servers = operation(path, method).servers ?? [];
      assert.equal(servers.length, 1, `${method} ${path} names its own server`);
      const url = new URL(resolved(servers[0]!));
      assert.equal(url.hostname, 'localhost', 'the operator host, not a workspace subdomain');
      assert.equal(url.port, '3000');
    }
    assert.equal(operation(`${API}/users`, 'get').servers, undefined, 'the external API keeps the document\'s workspace server');
    assert.match(document.servers[0]!.url, /\{workspace\}/);

    assert.equal(operation('/admin/v1/workspaces/{subdomain}/api-keys', 'post').requestBody?.required, false, 'the operator may send no body');
    assert.equal(operation(`${API}/api-keys`, 'post').requestBody?.required, true, 'the workspace must send its scopes');
    const noBody = await ctx.app.inject({ method: 'POST', url: `/admin/v1/workspaces/${ws.subdomain}/api-keys`, headers: { host: 'localhost:3000', authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(noBody.statusCode, 201, 'as the service does');

    assert.deepEqual(Object.keys(operation(`${API}/users/{email}`, 'patch').requestBody?.content ?? {}).sort(), ['application/json', 'application/merge-patch+json']);
  });

  test('the reference viewer\'s YAML on a workspace host has no /admin/v1; the operator host\'s has it', async () => {
    const yaml = await ctx.app.inject({ method: 'GET', url: '/docs/yaml', headers: { host: ws.host } });
    assert.equal(yaml.statusCode, 200);
    assert.match(yaml.body, /\/api\/external\/v2\/users/);
    assert.doesNotMatch(yaml.body, /\/admin\/v1/);
    assert.match((await ctx.app.inject({ method: 'GET', url: '/docs/yaml', headers: { host: 'localhost:3000' } })).body, /\/admin\/v1\/workspaces/);
  });
});
