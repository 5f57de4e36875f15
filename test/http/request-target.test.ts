import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { normaliseTarget } from '../../src/http/request-target.ts';
import { json } from '../helpers/json.ts';

/** Values for the path parameters of the OpenAPI document's routes. */
function fill(path: string): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => (name === 'email' ? 'someone@example.com' : name.endsWith('id') ? '00000000-0000-4000-8000-000000000000' : 'x'));
}

/** The spellings of one origin-form path an attacker may try. */
function spellings(path: string, port: number): Record<string, string> {
  const encoded = path.replace(/\/([a-z])/g, (_, c: string) => `/%${c.charCodeAt(0).toString(16)}`);
  return {
    plain: path,
    'percent-encoded': encoded,
    'percent-encoded (lower-case hex)': path.replace(/\/([a-z])/, (_, c: string) => `/%${c.charCodeAt(0).toString(16).toLowerCase()}`),
    'case-changed': path.toUpperCase(),
    'dot-segment': `/x/..${path}`,
    'dot-segment (encoded)': `/x/%2e%2E${path.replace(/^\/([^/]+)\//, '/$1/./')}`,
    'duplicate slash': `/${path}`,
    absolute: `http://127.0.0.1:${port}${path}`,
  };
}

describe(`one path for the router and every check [${BACKEND}]`, () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let port: number;
  let ws: TestWorkspace;
  let other: TestWorkspace;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('paths');
    other = await ctx.createWorkspace('paths-other');
    // Limits off: every request must reach the key check itself, not a 429 in front of it.
    app = await ctx.buildApp({ RATE_LIMIT_PER_KEY: '0', AUTH_FAILURE_LIMIT: '0' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  after(async () => {
    await app?.close();
    await ctx.close();
  });

  test('every route of the OpenAPI document, spelled every way, on every host: no 2xx without the right key, no 5xx', async () => {
    const document = json<{ paths: Record<string, object> }>(await ctx.app.inject({ method: 'GET', url: '/api/external/v2/openapi.json' }));
    const routes: [string, string][] = [];
    for (const [path, operations] of Object.entries(document.paths as Record<string, object>)) {
      for (const method of Object.keys(operations)) {
        if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) routes.push([method.toUpperCase(), fill(path)]);
      }
    }
    assert.ok(routes.length > 10, `${routes.length} routes`);
    const credentials = {
      'no key': {},
      "another workspace's key": { 'x-api-key': other.apiKey, authorization: `Bearer ${other.apiKey}` },
      'the right key': { 'x-api-key': ws.apiKey, authorization: `Bearer ${ws.apiKey}` },
    };
    const hosts = { workspace: ws.host, operator: `127.0.0.1:${port}`, unknown: 'nobody-here.localhost:3000' };
    const failures: string[] = [];
    for (const [method, path] of routes) {
      const isPublic = path === '/api/external/v2/openapi.json';
      for (const [form, target] of Object.entries(spellings(path, port))) {
        for (const [hostName, host] of Object.entries(hosts)) {
          for (const [keyName, headers] of Object.entries(credentials)) {
            const body = method === 'GET' || method === 'DELETE' ? undefined : '{}';
            const contentType: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
            const res = await rawRequest(port, method, target, { host, ...headers, ...contentType }, body);
            const label = `${method} ${target} on the ${hostName} host with ${keyName}: ${res.status}`;
            if (res.status === 0 || res.status >= 500) failures.push(label);
            const rightlyAuthorised = hostName === 'workspace' && keyName === 'the right key' && !path.startsWith('/admin/');
            if (res.status < 300 && !isPublic && !rightlyAuthorised) failures.push(label);
            if (form === 'absolute' && res.status !== 400) failures.push(`${label} (absolute form must be 400)`);
          }
        }
      }
    }
    assert.deepEqual(failures, []);
  });

  test('a percent-encoded or dot-segment spelling is served like the plain path with the key, and refused without it', async () => {
    for (const target of ['/%61pi/external/v2/products', '/api/external/v2/x/../products', '/api/%65xternal/v2/%70roducts']) {
      const served = await rawRequest(port, 'GET', target, { host: ws.host, 'x-api-key': ws.apiKey });
      assert.equal(served.status, 200, target);
      const refused = await rawRequest(port, 'GET', target, { host: ws.host });
      assert.equal(refused.status, 401, target);
      assert.equal(json<'Problem'>(refused.body).code, 'missing_api_key');
    }
  });

  test('an absolute-form request line is refused with 400 bad_request before the key is looked at', async () => {
    const res = await rawRequest(port, 'GET', 'http://x/api/external/v2/users', { host: ws.host });
    assert.equal(res.status, 400);
    assert.equal(json<'Problem'>(res.body).code, 'bad_request');
  });

  test('the per-key and failed-key limits count an encoded spelling once per request', async () => {
    const limited = await ctx.buildApp({ RATE_LIMIT_PER_KEY: '1', RATE_LIMIT_BURST: '5', AUTH_FAILURE_LIMIT: '3' });
    await limited.listen({ host: '127.0.0.1', port: 0 });
    const limitedPort = (limited.server.address() as AddressInfo).port;
    try {
      const key = await ctx.createWorkspace('paths-limited');
      const statuses: number[] = [];
      for (let i = 0; i < 8; i += 1) {
        statuses.push((await rawRequest(limitedPort, 'GET', '/%61pi/external/v2/products', { host: key.host, 'x-api-key': key.apiKey })).status);
      }
      assert.deepEqual(statuses.slice(0, 5), [200, 200, 200, 200, 200]);
      assert.ok(statuses.slice(5).every((s) => s === 429), statuses.join(','));
      const wrong: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        wrong.push((await rawRequest(limitedPort, 'GET', '/%61pi/external/v2/products', { host: key.host, 'x-api-key': 'wum_wrong' })).status);
      }
      assert.deepEqual(wrong, [401, 401, 401, 429, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('the normalised request target', () => {
  test('a plain path is kept as sent, query and all, and only a SCIM endpoint is respelled', () => {
    const kept = ['/', '/api/external/v2/products', '/api/external/v2/users/', '/api/external/v2/users?q=a%40b&page_number=2', '/x.y/.z?a=//b'];
    for (const target of kept) assert.deepEqual(normaliseTarget(target), { url: target, absolute: false }, target);
    assert.deepEqual(normaliseTarget('/scim/v2/users/?filter=userName%20eq%20%22a%22'), { url: '/scim/v2/Users?filter=userName%20eq%20%22a%22', absolute: false });
  });

  test('escapes, empty and dot segments are normalised wherever they are in the path, never in the query', () => {
    const cases: Record<string, string> = {
      '/%61pi/external/v2/products': '/api/external/v2/products',
      '/api/external/v2/users/a%40b.example?x=%61': '/api/external/v2/users/a%40b.example?x=%61',
      '//api/external/v2/products': '/api/external/v2/products',
      '/api/external/v2/x/../products?next=/../y': '/api/external/v2/products?next=/../y',
      '/api/./external/v2/products/.': '/api/external/v2/products/',
      '/api/external/v2/%2e%2E/v2/products': '/api/external/v2/products',
      '/.well-known/x': '/.well-known/x',
    };
    for (const [target, url] of Object.entries(cases)) assert.deepEqual(normaliseTarget(target), { url, absolute: false }, target);
    assert.deepEqual(normaliseTarget('http://h:1/api/external/v2/products'), { url: '/api/external/v2/products', absolute: true });
    assert.deepEqual(normaliseTarget('*'), { url: '*', absolute: false });
  });
});
