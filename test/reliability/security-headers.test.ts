import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { BASELINE_SECURITY_HEADERS } from '../../src/http/plugins/security-headers.ts';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';
import { chromiumHeadlessShell } from '../../harness/debian-programs.ts';

/*
 * Security headers on every response (docs/operations.md, "Security headers"; OWASP API8:2023) and
 * `Cache-Control: no-store` on everything that carries user data, keys or request ids.
 */

const HELMET_HEADERS: Record<string, RegExp> = {
  'x-content-type-options': /^nosniff$/,
  'x-frame-options': /^DENY$/,
  'referrer-policy': /^no-referrer$/,
  'strict-transport-security': /^max-age=\d+; includeSubDomains$/,
  'cross-origin-opener-policy': /^same-origin$/,
  'cross-origin-resource-policy': /^same-origin$/,
  'x-permitted-cross-domain-policies': /^none$/,
  'content-security-policy': /default-src 'none';\s*frame-ancestors 'none'/,
};

function assertSecurityHeaders(res: LightMyRequestResponse, what: string): void {
  for (const [name, pattern] of Object.entries(HELMET_HEADERS)) {
    assert.match(String(res.headers[name] ?? ''), pattern, `${name} on ${what} (${res.statusCode})`);
  }
  assert.equal(res.headers['x-powered-by'], undefined, what);
}

describe(`security headers [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('headers');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('present@example.com') })).statusCode, 201);
  });
  after(() => ctx.close());

  /** One request of every kind the service answers: success, each error family, admin, operations. */
  async function everyKindOfResponse(): Promise<Array<[string, LightMyRequestResponse]>> {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const raw = (options: InjectOptions) => ctx.app.inject(options);
    return [
      ['GET /users', await ctx.api(ws, 'GET', '/users')],
      ['GET /users/{email}', await ctx.api(ws, 'GET', '/users/present@example.com')],
      ['POST /users 201', await ctx.api(ws, 'POST', '/users', { body: userBody(`new-${Date.now()}@example.com`) })],
      ['POST /users 409', await ctx.api(ws, 'POST', '/users', { body: userBody('present@example.com') })],
      ['POST /users 400', await ctx.api(ws, 'POST', '/users', { body: { user: {} } })],
      ['POST /users 415', await raw({ method: 'POST', url: `${API}/users`, headers: { host: ws.host, 'x-api-key': ws.apiKey, 'content-type': 'text/xml' }, payload: '<x/>' })],
      ['DELETE /users/{email} 404', await ctx.api(ws, 'DELETE', '/users/nobody@example.com')],
      ['GET /products', await ctx.api(ws, 'GET', '/products')],
      ['401 missing key', await ctx.api(ws, 'GET', '/users', { noKey: true })],
      ['404 workspace', await raw({ url: `${API}/users`, headers: { host: 'nosuch-ws.localhost' } })],
      ['405', await ctx.api(ws, 'PATCH', '/users')],
      ['404 unknown path', await raw({ url: '/nothing-here' })],
      ['400 bad percent-encoding', await raw({ url: `${API}/users/%E0%A4%A`, headers: { host: ws.host, 'x-api-key': ws.apiKey } })],
      ['414', await raw({ url: `/${'x'.repeat(5000)}` })],
      ['admin 200', await raw({ url: '/admin/v1/workspaces', headers: admin })],
      ['admin 201 key', await raw({ method: 'POST', url: `/admin/v1/workspaces/${ws.subdomain}/api-keys`, headers: admin })],
      ['admin 401', await raw({ url: '/admin/v1/workspaces' })],
      ['healthz', await raw({ url: '/healthz' })],
      ['readyz', await raw({ url: '/readyz' })],
      ['metrics', await raw({ url: '/metrics' })],
      ['openapi.json', await raw({ url: `${API}/openapi.json` })],
    ];
  }

  test('every response carries the security headers and no X-Powered-By', async () => {
    for (const [what, res] of await everyKindOfResponse()) assertSecurityHeaders(res, what);
  });

  test('the fixed header set used where no hook runs is exactly what helmet sends', async () => {
    const res = await ctx.app.inject({ url: '/healthz' });
    const sent = Object.fromEntries(
      Object.keys(BASELINE_SECURITY_HEADERS).map((name) => [name, String(res.headers[name] ?? '')]),
    );
    assert.deepEqual(sent, BASELINE_SECURITY_HEADERS);
  });

  test('Cache-Control: no-store on every API, admin and operations response, errors included', async () => {
    for (const [what, res] of await everyKindOfResponse()) {
      if (what === 'openapi.json') continue;
      assert.equal(res.headers['cache-control'], 'no-store', what);
    }
  });

  test('an idempotent replay carries no-store and the security headers too', async () => {
    const headers = { 'idempotency-key': `replay-${Date.now()}` };
    const body = userBody(`replayed-${Date.now()}@example.com`);
    assert.equal((await ctx.api(ws, 'POST', '/users', { body, headers })).statusCode, 201);
    const replay = await ctx.api(ws, 'POST', '/users', { body, headers });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.headers['cache-control'], 'no-store');
    assertSecurityHeaders(replay, 'replay');
  });

  test('the public documentation may be cached: no no-store on /docs and the OpenAPI document', async () => {
    for (const url of [`${API}/openapi.json`, '/docs/', '/docs/static/swagger-ui-bundle.js']) {
      const res = await ctx.app.inject({ url });
      assert.equal(res.statusCode, 200, url);
      assert.notEqual(res.headers['cache-control'], 'no-store', url);
    }
  });

  test('/docs keeps working under its CSP: local scripts, styles and icons, no inline script, nothing third-party', async () => {
    const page = await ctx.app.inject({ url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    const csp = String(page.headers['content-security-policy']);
    const directives = new Map(csp.split(/;\s*/).map((d) => [d.split(' ')[0], d.split(' ').slice(1)] as const));
    assert.deepEqual(directives.get('default-src'), ["'none'"]);
    assert.deepEqual(directives.get('frame-ancestors'), ["'none'"]);
    assert.deepEqual(directives.get('connect-src'), ["'self'"], 'fetches only the OpenAPI document of this origin');
    const scriptSrc = directives.get('script-src') ?? [];
    assert.ok(scriptSrc.includes("'self'"));
    assert.ok(!scriptSrc.includes("'unsafe-inline'") && !scriptSrc.includes("'unsafe-eval'"), csp);
    assert.ok(!/https?:/.test(csp), 'no third-party origin');

    // Every <script src> of the page is local and served; every inline script is allowed by hash.
    const sources = [...page.body.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(sources.length > 0, 'the page loads its script');
    for (const src of sources) {
      const url = new URL(src, 'http://localhost/docs/');
      assert.equal(url.host, 'localhost', `${src} is served by us`);
      const script = await ctx.app.inject({ url: url.pathname });
      assert.equal(script.statusCode, 200, src);
      assert.match(String(script.headers['content-type']), /javascript/);
      assert.ok(script.body.length > 1000);
    }
    // The viewer starts from a local script, so the policy allows no inline script at all.
    const inline = [...page.body.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)];
    assert.equal(inline.length, 0);
    assert.deepEqual(scriptSrc, ["'self'"]);
    // Its stylesheets and icons are local and served too, the icons as the bytes they are.
    const links = [...page.body.matchAll(/<link rel="(stylesheet|icon)"[^>]*\bhref="([^"]+)"/g)].map((m) => [m[1]!, m[2]!] as const);
    assert.ok(links.some(([rel]) => rel === 'stylesheet') && links.some(([rel]) => rel === 'icon'), page.body);
    for (const [rel, href] of links) {
      const url = new URL(href, 'http://localhost/docs/');
      assert.equal(url.host, 'localhost', `${href} is served by us`);
      const asset = await ctx.app.inject({ url: url.pathname });
      assert.equal(asset.statusCode, 200, href);
      if (rel === 'stylesheet') assert.match(String(asset.headers['content-type']), /^text\/css/);
      else assert.deepEqual([...asset.rawPayload.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], `${href} is a PNG`);
    }
    for (const name of ['x-content-type-options', 'x-frame-options', 'referrer-policy', 'strict-transport-security']) {
      assert.equal(page.headers[name], BASELINE_SECURITY_HEADERS[name], name);
    }
  });

  // A real browser: the page renders under its CSP, which blocks nothing it loads (the shell
  // logs each violation to stderr as the browser does).
  if (BACKEND === 'pglite') {
    test('/docs renders in a headless Chromium under its CSP', { timeout: 60_000 }, async () => {
      await ctx.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = ctx.app.server.address() as AddressInfo;
      const { stdout, stderr } = await promisify(execFile)(
        chromiumHeadlessShell(),
        ['--headless', '--no-sandbox', '--disable-gpu', '--virtual-time-budget=10000', '--enable-logging=stderr', '--v=0', '--dump-dom', `http://127.0.0.1:${port}/docs/`],
        { timeout: 50_000, maxBuffer: 100 * 1024 * 1024 },
      );
      const document = json<{ info: { title: string }; paths: Record<string, Record<string, { summary: string }>> }>(await ctx.app.inject({ url: `${API}/openapi.json` }));
      const escape = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
      assert.ok(stdout.includes(escape(document.info.title)), 'the viewer rendered the document title');
      const summary: string = document.paths[`${API}/users`]!.post!.summary;
      assert.ok(stdout.includes(escape(summary)), `and the operations ("${summary}")`);
      assert.deepEqual(stderr.split('\n').filter((line) => /Content Security Policy/.test(line)), []);
    });
  }
});
