import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { testClock } from '../helpers/test-clock.ts';
import { json, type ConsoleSession } from '../helpers/json.ts';

const SESSION = `${API}/console/session`;

/** The console's key sign-in exchanged for a server-side session (docs/security.md, "Console sessions"). */
describe(`console sessions [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  const origin = (ws: TestWorkspace, scheme = 'http') => `${scheme}://${ws.host}`;

  async function signIn(ws: TestWorkspace, app: FastifyInstance = ctx.app, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    return app.inject({ method: 'POST', url: SESSION, headers: { host: ws.host, 'x-api-key': ws.apiKey, origin: origin(ws), ...headers } });
  }

  /** The `name=value` of the response's cookie. */
  function cookieOf(res: LightMyRequestResponse): string {
    const header = res.headers['set-cookie'];
    assert.ok(typeof header === 'string', `one Set-Cookie: ${JSON.stringify(header)}`);
    return header.split(';', 1)[0]!;
  }

  function withCookie(ws: TestWorkspace, cookie: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, headers: Record<string, string> = {}, body?: unknown, app = ctx.app) {
    return app.inject({
      method,
      url: `${API}${path}`,
      headers: { host: ws.host, cookie, ...headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });
  }

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.equal(json<'Problem'>(res).code, code, res.body);
  }

  test('the key is exchanged for an HttpOnly, SameSite=Lax cookie; only the hash of the session id is stored', async () => {
    const ws = await ctx.createWorkspace('sess');
    const res = await signIn(ws);
    assert.equal(res.statusCode, 201, res.body);
    const header = res.headers['set-cookie'] as string;
    assert.match(header, /^wum_session=[A-Za-z0-9_-]{43}; /);
    assert.match(header, /; HttpOnly/);
    assert.match(header, /; SameSite=Lax/);
    assert.match(header, /; Path=\//);
    assert.doesNotMatch(header, /; Secure/, 'plain http: no Secure (the quick start runs on http)');
    assert.doesNotMatch(header, /Domain=/i, 'this host only');
    const body = json<ConsoleSession>(res);
    assert.deepEqual(body.workspace, { subdomain: ws.subdomain });
    assert.equal(body.actor.type, 'api_key');
    assert.equal(body.actor.id, ws.apiKeyId);
    assert.ok(!res.body.includes(ws.apiKey), 'the key is not echoed');

    const cookie = cookieOf(res);
    const id = cookie.split('=')[1]!;
    const rows = (await ctx.database.db.execute(sql`select id_hash from console_sessions`)) as unknown as { rows: Array<{ id_hash: string }> };
    const hashes = rows.rows.map((r) => r.id_hash);
    assert.ok(hashes.includes(createHash('sha256').update(id).digest('hex')), 'the SHA-256 of the id is stored');
    assert.ok(!hashes.includes(id), 'never the id itself');

    assert.equal((await withCookie(ws, cookie, 'GET', '/users')).statusCode, 200, 'the cookie alone opens the API');
    const who = await withCookie(ws, cookie, 'GET', '/console/session');
    assert.equal(who.statusCode, 200, who.body);
    assert.deepEqual(json<ConsoleSession>(who).workspace, { subdomain: ws.subdomain });
  });

  test('over https (behind a trusted proxy) the cookie is Secure and named __Host-; X-Forwarded-Proto is ignored without TRUST_PROXY', async () => {
    const ws = await ctx.createWorkspace('sess-https');
    const proxied = await ctx.buildApp({ TRUST_PROXY: 'true' });
    const https = await signIn(ws, proxied, { 'x-forwarded-proto': 'https', origin: origin(ws, 'https') });
    assert.equal(https.statusCode, 201, https.body);
    const header = https.headers['set-cookie'] as string;
    assert.match(header, /^__Host-wum_session=/);
    assert.match(header, /; Secure/);
    assert.match(header, /; Path=\//);
    assert.doesNotMatch(header, /Domain=/i);
    const cookie = cookieOf(https);
    assert.equal((await withCookie(ws, cookie, 'GET', '/users', { 'x-forwarded-proto': 'https' }, undefined, proxied)).statusCode, 200);

    const untrusted = await signIn(ws, ctx.app, { 'x-forwarded-proto': 'https' });
    assert.equal(untrusted.statusCode, 201, untrusted.body);
    assert.match(untrusted.headers['set-cookie'] as string, /^wum_session=/);
    assert.doesNotMatch(untrusted.headers['set-cookie'] as string, /; Secure/);
  });

  test('a write with the cookie is refused unless it comes from the console\'s own origin (CSRF); nothing changes', async () => {
    const ws = await ctx.createWorkspace('sess-csrf');
    const cookie = cookieOf(await signIn(ws));
    const contentJson = { 'content-type': 'application/json' };
    for (const headers of <Array<Record<string, string>>>[
      { origin: 'http://evil.example' },
      { origin: `http://other.${ws.host.split('.').slice(1).join('.')}` },
      { 'sec-fetch-site': 'same-site', origin: origin(ws) },
      { 'sec-fetch-site': 'cross-site' },
      {},
    ]) {
      const res = await withCookie(ws, cookie, 'POST', '/users', { ...contentJson, ...headers }, userBody('forged@example.com'));
      assertProblem(res, 403, 'cross_origin_refused');
    }
    assertProblem(await withCookie(ws, cookie, 'DELETE', '/users/anyone@example.com', { origin: 'http://evil.example' }), 403, 'cross_origin_refused');
    assert.equal((await ctx.api(ws, 'GET', '/users/forged@example.com')).statusCode, 404, 'nothing was added');

    const same = await withCookie(ws, cookie, 'POST', '/users', { ...contentJson, origin: origin(ws) }, userBody('real@example.com'));
    assert.equal(same.statusCode, 201, same.body);
    const fetched = await withCookie(ws, cookie, 'PATCH', '/users/real@example.com', { ...contentJson, 'sec-fetch-site': 'same-origin' }, { user: { first_name: 'Real' } });
    assert.equal(fetched.statusCode, 200, fetched.body);
    // A key in X-Api-Key is not a cookie: scripts and integrations are not asked for an Origin.
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('script@example.com') })).statusCode, 201);
    // Sign-in itself is refused cross-origin (a forged sign-in would plant the attacker's session).
    assertProblem(await signIn(ws, ctx.app, { origin: 'http://evil.example' }), 403, 'cross_origin_refused');
  });

  test('sign-out ends the session: the cookie is cleared and refused afterwards', async () => {
    const ws = await ctx.createWorkspace('sess-out');
    const cookie = cookieOf(await signIn(ws));
    const out = await withCookie(ws, cookie, 'DELETE', '/console/session', { origin: origin(ws) });
    assert.equal(out.statusCode, 204, out.body);
    assert.match(out.headers['set-cookie'] as string, /^wum_session=; .*Expires=Thu, 01 Jan 1970/);
    assertProblem(await withCookie(ws, cookie, 'GET', '/users'), 401, 'invalid_session');
    assertProblem(await withCookie(ws, 'wum_session=made-up', 'GET', '/users'), 401, 'invalid_session');
    const trail = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`)).audit_events;
    const signIns = trail.filter((e: { action: string }) => e.action.startsWith('console.'));
    assert.deepEqual(signIns.map((e: { action: string }) => e.action), ['console.signed_in', 'console.signed_out'], 'sign-in and sign-out are audited');
    for (const event of signIns) {
      assert.equal(event.actor.type, 'api_key');
      assert.equal(event.actor.id, ws.apiKeyId);
      assert.equal(event.target_id, ws.apiKeyId);
      assert.ok(!JSON.stringify(event).includes(cookie.split('=')[1]!), 'never the session id');
    }
  });

  test('revoking the key ends its sessions at once, on another replica too; the session keeps the key\'s scopes', async () => {
    const ws = await ctx.createWorkspace('sess-revoke');
    const created = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, { name: 'console', scopes: ['users:read'] }));
    const reader = { ...ws, apiKey: created.key, apiKeyId: created.id };
    const cookie = cookieOf(await signIn(reader));
    const replica = await ctx.buildApp();
    assert.equal((await withCookie(ws, cookie, 'GET', '/users', {}, undefined, replica)).statusCode, 200);
    assertProblem(
      await withCookie(ws, cookie, 'POST', '/users', { 'content-type': 'application/json', origin: origin(ws) }, userBody('x@example.com')),
      403,
      'insufficient_scope',
    );
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${created.id}`)).statusCode, 204);
    assertProblem(await withCookie(ws, cookie, 'GET', '/users', {}, undefined, replica), 401, 'invalid_session');
    assertProblem(await withCookie(ws, cookie, 'GET', '/users'), 401, 'invalid_session');
  });

  test('idle and absolute expiry (SESSION_IDLE_MINUTES, SESSION_MAX_HOURS)', async () => {
    const ws = await ctx.createWorkspace('sess-expiry');
    // Apps whose clocks the test moves forward instead of waiting for the time to pass.
    const idleClock = testClock();
    const idle = await ctx.buildApp({ SESSION_IDLE_MINUTES: '30' }, idleClock.now);
    const idleCookie = cookieOf(await signIn(ws, idle));
    assert.equal((await withCookie(ws, idleCookie, 'GET', '/users', {}, undefined, idle)).statusCode, 200);
    idleClock.advance(31 * 60_000);
    assertProblem(await withCookie(ws, idleCookie, 'GET', '/users', {}, undefined, idle), 401, 'invalid_session');

    const maxClock = testClock();
    const short = await ctx.buildApp({ SESSION_MAX_HOURS: '1' }, maxClock.now);
    const signedInAt = Date.now();
    const res = await signIn(ws, short);
    const expires = /Expires=([^;]+)/.exec(res.headers['set-cookie'] as string)![1]!;
    assert.ok(Math.abs(Date.parse(expires) - (signedInAt + 3_600_000)) < 3000, `the cookie expires with the session: ${expires}`);
    const shortCookie = cookieOf(res);
    // In use all along (the idle expiry is 8 h), it still ends at its absolute expiry.
    for (const minutes of [0, 20, 20, 19]) {
      maxClock.advance(minutes * 60_000);
      assert.equal((await withCookie(ws, shortCookie, 'GET', '/users', {}, undefined, short)).statusCode, 200);
    }
    maxClock.advance(2 * 60_000);
    assertProblem(await withCookie(ws, shortCookie, 'GET', '/users', {}, undefined, short), 401, 'invalid_session');
  });

  test('CONSOLE_KEY_SIGN_IN=never forbids the key sign-in; a bad key is 401 as anywhere', async () => {
    const ws = await ctx.createWorkspace('sess-never');
    const never = await ctx.buildApp({ CONSOLE_KEY_SIGN_IN: 'never' });
    const refused = await signIn(ws, never);
    assertProblem(refused, 403, 'key_sign_in_disabled');
    assert.equal(refused.headers['set-cookie'], undefined);
    assertProblem(await signIn({ ...ws, apiKey: 'wum_not-a-key' }), 401, 'invalid_api_key');
    assertProblem(await ctx.app.inject({ method: 'GET', url: SESSION, headers: { host: ws.host } }), 401, 'missing_api_key');
  });
});
