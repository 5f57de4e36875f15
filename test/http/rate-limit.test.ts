import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

describe(`rate limits [${BACKEND}]`, () => {
  let ctx: TestContext;

  /** Calls the external API of `ws` through `app` (another app on the same database). */
  const call = (
    app: FastifyInstance,
    ws: TestWorkspace,
    options: { method?: InjectOptions['method']; path?: string; key?: string; body?: unknown; remoteAddress?: string } = {},
  ) =>
    app.inject({
      method: options.method ?? 'GET',
      url: `${API}${options.path ?? '/users'}`,
      headers: { host: ws.host, 'x-api-key': options.key ?? ws.apiKey },
      ...(options.body === undefined ? {} : { payload: options.body as object }),
      ...(options.remoteAddress ? { remoteAddress: options.remoteAddress } : {}),
    });

  function assertRateLimited(res: LightMyRequestResponse): void {
    assert.equal(res.statusCode, 429, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, 'rate_limited');
    assert.equal(json<'Problem'>(res).status, 429);
    const retryAfter = res.headers['retry-after'] as string;
    assert.match(retryAfter, /^\d+$/, 'Retry-After is a whole number of seconds');
    assert.ok(Number(retryAfter) >= 1);
  }

  async function newKey(ws: TestWorkspace): Promise<string> {
    const res = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`);
    assert.equal(res.statusCode, 201);
    return json<'createApiKey'>(res).key;
  }

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  test('every response of the external API carries RateLimit-Policy and RateLimit', async () => {
    const app = await ctx.buildApp({ RATE_LIMIT_PER_KEY: '1', RATE_LIMIT_BURST: '3' });
    const ws = await ctx.createWorkspace('rl');
    for (const res of [
      await call(app, ws),
      await call(app, ws, { path: '/users/nobody@example.com' }),
      await call(app, ws, { path: '/products' }),
    ]) {
      assert.ok(res.statusCode < 429, res.body);
      const policy = res.headers['ratelimit-policy'] as string;
      assert.ok(policy, `RateLimit-Policy on ${res.statusCode}`);
      assert.match(policy, /;q=3(;|$)/, 'the quota is the burst');
      assert.match(policy, /;w=\d+/);
      assert.match(res.headers.ratelimit as string, /;r=\d+/);
      assert.match(res.headers.ratelimit as string, /;t=\d+/);
    }
  });

  test('the default app announces the default limit (burst 200)', async () => {
    const ws = await ctx.createWorkspace('rl');
    const res = await ctx.api(ws, 'GET', '/users');
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['ratelimit-policy'] as string, /;q=200(;|$)/);
  });

  test('the burst is spent one request at a time; the next one → 429 rate_limited with Retry-After', async () => {
    // A slow refill (one token every ten seconds) so that the count does not depend on speed.
    const app = await ctx.buildApp({ RATE_LIMIT_PER_KEY: '0.1', RATE_LIMIT_BURST: '3' });
    const ws = await ctx.createWorkspace('rl');
    const remaining: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await call(app, ws);
      assert.equal(res.statusCode, 200, res.body);
      remaining.push(Number(/;r=(\d+)/.exec(res.headers.ratelimit as string)?.[1]));
    }
    assert.deepEqual(remaining, [2, 1, 0]);

    const limited = await call(app, ws, { method: 'POST', body: userBody('blocked@example.com') });
    assertRateLimited(limited);
    assert.match(limited.headers.ratelimit as string, /;r=0(;|$)/);
    assertRateLimited(await call(app, ws));

    const stored = await ctx.api(ws, 'GET', '/users/blocked@example.com');
    assert.equal(stored.statusCode, 404, 'the limited request did not run');
  });

  test('with 1/s and burst 3, the 4th quick request → 429', async () => {
    const app = await ctx.buildApp({ RATE_LIMIT_PER_KEY: '1', RATE_LIMIT_BURST: '3' });
    const ws = await ctx.createWorkspace('rl');
    const responses: LightMyRequestResponse[] = [];
    for (let i = 0; i < 4; i += 1) responses.push(await call(app, ws));
    assert.deepEqual(responses.slice(0, 3).map((r) => r.statusCode), [200, 200, 200]);
    assertRateLimited(responses[3]!);
    assert.ok(Number(responses[3]!.headers['retry-after']) <= 1, 'one token is back within a second');
  });

  test('another key of the same workspace, and another workspace, are unaffected', async () => {
    const app = await ctx.buildApp({ RATE_LIMIT_PER_KEY: '0.1', RATE_LIMIT_BURST: '3' });
    const ws = await ctx.createWorkspace('rl');
    const other = await ctx.createWorkspace('rl-other');
    const second = await newKey(ws);
    for (let i = 0; i < 3; i += 1) assert.equal((await call(app, ws)).statusCode, 200);
    assertRateLimited(await call(app, ws));

    const bySecond = await call(app, ws, { key: second, method: 'POST', body: userBody('second@example.com') });
    assert.equal(bySecond.statusCode, 201, bySecond.body);
    assert.match(bySecond.headers.ratelimit as string, /;r=2(;|$)/, 'its own full bucket');
    assert.equal((await call(app, other)).statusCode, 200);
    assertRateLimited(await call(app, ws));
  });

  test('RATE_LIMIT_PER_KEY=0 or RATE_LIMIT_BURST=0 turns the per-key limit off: no 429, no RateLimit fields', async () => {
    const settings: Record<string, string>[] = [
      { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_BURST: '3' },
      { RATE_LIMIT_PER_KEY: '0' },
      { RATE_LIMIT_PER_KEY: '1', RATE_LIMIT_BURST: '0' },
    ];
    for (const env of settings) {
      const app = await ctx.buildApp(env);
      const ws = await ctx.createWorkspace('rl-off');
      for (let i = 0; i < 25; i += 1) {
        const res = await call(app, ws);
        assert.equal(res.statusCode, 200, `${JSON.stringify(env)} request ${i + 1}: ${res.body}`);
        assert.equal(res.headers['ratelimit-policy'], undefined);
        assert.equal(res.headers.ratelimit, undefined);
      }
    }
  });

  test('AUTH_FAILURE_LIMIT: after 3 invalid keys from one address the next attempt → 429; another address still gets 401', async () => {
    const app = await ctx.buildApp({ AUTH_FAILURE_LIMIT: '3' });
    const ws = await ctx.createWorkspace('rl-auth');
    const attacker = '203.0.113.7';
    for (let i = 0; i < 3; i += 1) {
      const res = await call(app, ws, { key: `wum_guess${i}`, remoteAddress: attacker });
      assert.equal(res.statusCode, 401, res.body);
      assert.equal(json<'Problem'>(res).code, 'invalid_api_key');
    }
    assertRateLimited(await call(app, ws, { key: 'wum_guess3', remoteAddress: attacker }));
    assertRateLimited(await call(app, ws, { key: 'wum_guess4', remoteAddress: attacker }));

    const bystander = await call(app, ws, { key: 'wum_typo', remoteAddress: '198.51.100.20' });
    assert.equal(bystander.statusCode, 401, bystander.body);
    assert.equal(json<'Problem'>(bystander).code, 'invalid_api_key');
    const valid = await call(app, ws, { remoteAddress: '198.51.100.20' });
    assert.equal(valid.statusCode, 200, 'a valid key from another address works');
  });

  test('failed attempts are counted per address over all workspaces; the default inject address counts too', async () => {
    const app = await ctx.buildApp({ AUTH_FAILURE_LIMIT: '3' });
    const a = await ctx.createWorkspace('rl-auth-a');
    const b = await ctx.createWorkspace('rl-auth-b');
    assert.equal((await call(app, a, { key: b.apiKey })).statusCode, 401);
    assert.equal((await call(app, b, { key: a.apiKey })).statusCode, 401);
    assert.equal((await call(app, a, { key: 'wum_nope' })).statusCode, 401);
    assertRateLimited(await call(app, b, { key: 'wum_nope' }));
    const elsewhere = await call(app, b, { key: 'wum_nope', remoteAddress: '192.0.2.1' });
    assert.equal(elsewhere.statusCode, 401);
  });

  test('21 wrong keys from one address: the admin token and every workspace\'s valid keys still work from there; wrong keys stay limited', async () => {
    const app = await ctx.buildApp({ AUTH_FAILURE_LIMIT: '20' });
    const a = await ctx.createWorkspace('rl-nat-a');
    const b = await ctx.createWorkspace('rl-nat-b');
    const shared = '203.0.113.80';
    const statuses: number[] = [];
    for (let i = 0; i < 21; i += 1) statuses.push((await call(app, a, { key: `wum_guess${i}`, remoteAddress: shared })).statusCode);
    assert.deepEqual(statuses, [...Array<number>(20).fill(401), 429]);

    const ownKey = await call(app, a, { remoteAddress: shared });
    assert.equal(ownKey.statusCode, 200, ownKey.body);
    assert.equal(ownKey.headers['ratelimit-policy'], '"per-key";q=200;w=2', 'only the per-key limit applies to a valid key');
    assert.equal((await call(app, b, { remoteAddress: shared })).statusCode, 200, 'another workspace\'s valid key');
    const operator = await app.inject({
      method: 'GET',
      url: '/admin/v1/workspaces',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      remoteAddress: shared,
    });
    assert.equal(operator.statusCode, 200, operator.body);

    // Guessing goes on being limited from that address, on every workspace and for the admin token.
    assertRateLimited(await call(app, b, { key: 'wum_guess21', remoteAddress: shared }));
    const wrongToken = await app.inject({
      method: 'GET',
      url: '/admin/v1/workspaces',
      headers: { authorization: 'Bearer wrong-token-0123456789' },
      remoteAddress: shared,
    });
    assertRateLimited(wrongToken);
    assert.equal((await call(app, b, { key: 'wum_guess22', remoteAddress: '198.51.100.81' })).statusCode, 401, 'another address');
  });

  test('failures are counted per credential too: one wrong key from many addresses → 429; other wrong keys from those addresses → 401', async () => {
    const app = await ctx.buildApp({ AUTH_FAILURE_LIMIT: '3' });
    const ws = await ctx.createWorkspace('rl-cred');
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await call(app, ws, { key: 'wum_revoked-long-ago', remoteAddress: `192.0.2.${100 + i}` })).statusCode);
    assert.deepEqual(statuses, [401, 401, 401, 429, 429]);
    assert.equal((await call(app, ws, { key: 'wum_other', remoteAddress: '192.0.2.100' })).statusCode, 401);
    // The same key on its own workspace's host is another credential: a key sent to the wrong host is not held against it.
    const other = await ctx.createWorkspace('rl-cred-other');
    for (let i = 0; i < 4; i += 1) assert.equal((await call(app, ws, { key: other.apiKey, remoteAddress: `192.0.2.${120 + i}` })).statusCode, i < 3 ? 401 : 429);
    assert.equal((await call(app, other, { remoteAddress: '192.0.2.120' })).statusCode, 200);
  });

  test('successful requests do not count as failed attempts', async () => {
    const app = await ctx.buildApp({ AUTH_FAILURE_LIMIT: '3' });
    const ws = await ctx.createWorkspace('rl-auth-ok');
    for (let i = 0; i < 10; i += 1) assert.equal((await call(app, ws, { remoteAddress: '192.0.2.50' })).statusCode, 200);
    for (let i = 0; i < 3; i += 1) {
      assert.equal((await call(app, ws, { key: 'wum_bad', remoteAddress: '192.0.2.50' })).statusCode, 401, `failure ${i + 1}`);
    }
    assertRateLimited(await call(app, ws, { key: 'wum_bad', remoteAddress: '192.0.2.50' }));
  });
});
