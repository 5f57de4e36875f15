import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Registry } from 'prom-client';
import { buildApp } from '../../src/http/app.ts';
import { rateLimitDependencies } from '../../src/server/app-dependencies.ts';
import { webhookUrlCheck } from '../../src/webhooks/url-guard.ts';
import { createIdempotencyStore } from '../../src/storage/idempotency.queries.ts';
import { startRedisServer, type RedisServer } from '../../harness/redis-server.ts';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, testConfig, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * REDIS_URL (docs/contract.md Part B, "Running several replicas"): the per-key token bucket and the
 * failed-key limit live in Redis, so two replicas (here two apps with their own Redis
 * connections and no memory in common, as two processes have) spend one budget. While Redis
 * is unreachable the limits fail open: requests go on at once, each is counted in
 * `rate_limit_fail_open_total`, and the outage and the recovery are each logged once.
 */

/** A replica's commands give up after this long; a fail-open request waits at most twice (a refused key: its address's and its own bucket). */
const REDIS_TIMEOUT_MS = 200;
/** Generous bound for "promptly": ioredis would otherwise queue commands until it reconnects. */
const PROMPT_MS = 1500;

interface Replica {
  readonly app: FastifyInstance;
  /** Log lines written so far. */
  readonly logs: string[];
}

describe(`rate limits shared through Redis [${BACKEND}]`, () => {
  let ctx: TestContext;
  let redis: RedisServer;
  const apps: FastifyInstance[] = [];
  const connections: Array<{ close(): Promise<void> }> = [];

  async function replica(env: Record<string, string>): Promise<Replica> {
    const logs: string[] = [];
    const config = testConfig({ REDIS_URL: redis.url, REDIS_TIMEOUT_MS: String(REDIS_TIMEOUT_MS), ...env });
    // As server/service.ts does: the limits are built first, connected once the app can log.
    const registry = new Registry();
    const limits = await rateLimitDependencies(config, registry);
    connections.push(limits);
    const app = await buildApp(config, {
      rateLimits: limits.rateLimits,
      registry,
      checkWebhookUrl: webhookUrlCheck(config.webhooks),
      store: ctx.store,
      idempotency: createIdempotencyStore(ctx.database.db),
      ping: ctx.database.ping,
      logger: { level: 'info', stream: { write: (line: string) => void logs.push(line) } },
    });
    await app.ready();
    apps.push(app);
    limits.connect(app.log.child({ component: 'redis' }));
    await waitFor(async () => (await connected(app)) === 1, 'connected to Redis');
    // Tests count log lines from a connected start: on a loaded machine the first connection
    // attempt may time out and log an outage and a recovery of its own before this point.
    logs.splice(0, logs.length);
    return { app, logs };
  }

  async function waitFor(check: () => Promise<boolean>, what: string, limitMs = 10_000): Promise<void> {
    const deadline = Date.now() + limitMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`${what}: not within ${limitMs} ms`);
      await sleep(25);
    }
  }

  const metrics = async (app: FastifyInstance) => (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const connected = async (app: FastifyInstance) => Number(/^rate_limit_redis_connected (\d+)$/m.exec(await metrics(app))?.[1]);
  const failOpen = async (app: FastifyInstance, limit: string) =>
    Number(new RegExp(`^rate_limit_fail_open_total\\{limit="${limit}"\\} (\\d+)$`, 'm').exec(await metrics(app))?.[1] ?? 0);
  const call = (app: FastifyInstance, ws: TestWorkspace, options: { key?: string; remoteAddress?: string } = {}) =>
    app.inject({
      method: 'GET',
      url: `${API}/users`,
      headers: { host: ws.host, 'x-api-key': options.key ?? ws.apiKey },
      ...(options.remoteAddress ? { remoteAddress: options.remoteAddress } : {}),
    });
  const remaining = (res: LightMyRequestResponse) => Number(/;r=(\d+)/.exec(res.headers.ratelimit as string)?.[1]);
  const lines = (logs: string[], pattern: RegExp) => logs.filter((line) => pattern.test(line)).length;

  function assertRateLimited(res: LightMyRequestResponse): void {
    assert.equal(res.statusCode, 429, res.body);
    assert.equal(json<'Problem'>(res).code, 'rate_limited');
    assert.match(res.headers['retry-after'] as string, /^[1-9]\d*$/);
  }

  before(async () => {
    ctx = await createTestContext();
    redis = await startRedisServer();
  });
  after(async () => {
    for (const app of apps) await app.close();
    for (const limits of connections) await limits.close();
    await ctx?.close();
    await redis?.stop();
  });

  test('one per-key bucket for both replicas: a burst of 4 spent through both, the next request on either → 429', async () => {
    const env = { RATE_LIMIT_PER_KEY: '0.1', RATE_LIMIT_BURST: '4' };
    const [a, b] = [await replica(env), await replica(env)];
    const ws = await ctx.createWorkspace('redis-rl');
    const answers = [await call(a.app, ws), await call(b.app, ws), await call(a.app, ws), await call(b.app, ws)];
    assert.deepEqual(answers.map((r) => r.statusCode), [200, 200, 200, 200]);
    assert.deepEqual(answers.map(remaining), [3, 2, 1, 0], 'each replica sees what the other took');
    for (const res of answers) assert.match(res.headers['ratelimit-policy'] as string, /^"per-key";q=4;w=40$/);
    for (const app of [a.app, b.app]) {
      const limited = await call(app, ws);
      assertRateLimited(limited);
      assert.ok(Number(limited.headers['retry-after']) <= 10, 'one token is back within 10 s at 0.1/s');
      assert.equal(remaining(limited), 0);
    }
    const other = await ctx.createWorkspace('redis-rl-other');
    assert.equal((await call(b.app, other)).statusCode, 200, 'another key has its own bucket');
  });

  test('failed key attempts from one address are counted across replicas; valid credentials from it are still served', async () => {
    const env = { AUTH_FAILURE_LIMIT: '3' };
    const [a, b] = [await replica(env), await replica(env)];
    const ws = await ctx.createWorkspace('redis-auth');
    const attacker = '203.0.113.9';
    for (const app of [a.app, b.app, a.app]) {
      const res = await call(app, ws, { key: 'wum_guess', remoteAddress: attacker });
      assert.equal(res.statusCode, 401, res.body);
      assert.equal(json<'Problem'>(res).code, 'invalid_api_key');
    }
    assertRateLimited(await call(b.app, ws, { key: 'wum_guess', remoteAddress: attacker }));
    assertRateLimited(await call(a.app, ws, { key: 'wum_guess-again', remoteAddress: attacker }));
    assert.equal((await call(a.app, ws, { remoteAddress: attacker })).statusCode, 200, 'the valid key is not refused for others\' failures');
    const other = await ctx.createWorkspace('redis-auth-other');
    assert.equal((await call(b.app, other, { remoteAddress: attacker })).statusCode, 200, 'nor another workspace\'s key');
    const operator = (token: string) =>
      b.app.inject({ method: 'GET', url: '/admin/v1/workspaces', headers: { authorization: `Bearer ${token}` }, remoteAddress: attacker });
    assert.equal((await operator(ADMIN_TOKEN)).statusCode, 200, 'nor the admin token');
    assertRateLimited(await operator('wrong-token-0123456789'));
    assert.equal((await call(b.app, ws, { key: 'wum_typo', remoteAddress: '198.51.100.3' })).statusCode, 401, 'another address');
  });

  test('sign-in starts are counted across replicas, per address and per workspace', async () => {
    const [a, b] = [await replica({ SIGN_IN_START_LIMIT: '3' }), await replica({ SIGN_IN_START_LIMIT: '3' })];
    const ws = await ctx.createWorkspace('redis-starts');
    const start = (app: FastifyInstance, remoteAddress: string) => app.inject({ method: 'GET', url: '/console/oidc/start', headers: { host: ws.host }, remoteAddress });
    // No identity provider: each start is answered with the refusal page, after it was counted.
    for (const app of [a.app, b.app, a.app]) assert.equal((await start(app, '203.0.113.70')).statusCode, 404);
    assertRateLimited(await start(b.app, '203.0.113.70'));
    assert.equal((await start(b.app, '203.0.113.71')).statusCode, 404, 'another address');

    const [c, d] = [await replica({ SIGN_IN_START_LIMIT_PER_WORKSPACE: '2' }), await replica({ SIGN_IN_START_LIMIT_PER_WORKSPACE: '2' })];
    const other = await ctx.createWorkspace('redis-starts-ws');
    const startOther = (app: FastifyInstance, remoteAddress: string) => app.inject({ method: 'GET', url: '/console/oidc/start', headers: { host: other.host }, remoteAddress });
    assert.equal((await startOther(c.app, '203.0.113.80')).statusCode, 404);
    assert.equal((await startOther(d.app, '203.0.113.81')).statusCode, 404);
    assertRateLimited(await startOther(c.app, '203.0.113.82'));
  });

  test('Redis frozen: requests go on promptly and are counted as fail-open; logged once each way; the limit holds again after', async () => {
    const { app, logs } = await replica({ RATE_LIMIT_PER_KEY: '0.1', RATE_LIMIT_BURST: '2', AUTH_FAILURE_LIMIT: '5' });
    const ws = await ctx.createWorkspace('redis-frozen');
    assert.equal((await call(app, ws)).statusCode, 200);
    assert.equal((await call(app, ws)).statusCode, 200);
    assertRateLimited(await call(app, ws));

    redis.pause();
    try {
      for (let i = 0; i < 4; i += 1) {
        const started = performance.now();
        const res = await call(app, ws);
        const took = performance.now() - started;
        assert.equal(res.statusCode, 200, `request ${i + 1} fails open: ${res.body}`);
        assert.ok(took < PROMPT_MS, `request ${i + 1} answered in ${took.toFixed(0)} ms`);
        assert.match(res.headers['ratelimit-policy'] as string, /^"per-key";q=2;/, 'the policy is still announced');
        assert.equal(res.headers.ratelimit, undefined, 'no remaining count is made up');
      }
      assert.equal(await failOpen(app, 'per-key'), 4);
      assert.equal(await failOpen(app, 'auth-failures'), 0, 'a valid key never reads the failed-attempt buckets');
      const started = performance.now();
      const wrong = await call(app, ws, { key: 'wum_wrong-while-frozen' });
      assert.equal(wrong.statusCode, 401, wrong.body);
      assert.ok(performance.now() - started < PROMPT_MS, 'a wrong key is answered promptly too');
      assert.equal(await failOpen(app, 'auth-failures'), 2, 'its address\'s and its own bucket both failed open');
      assert.equal(lines(logs, /Redis unreachable/), 1, 'the outage is logged once');
    } finally {
      redis.resume();
    }
    await waitFor(async () => (await call(app, ws)).statusCode === 429, 'the bucket, still empty, applies again');
    assert.equal(lines(logs, /Redis reachable again/), 1, 'the recovery is logged once');
    assert.equal(lines(logs, /Redis unreachable/), 1);
  });

  test('Redis stopped: requests go on at once; a restarted Redis is used again without a restart of the replica', async () => {
    const { app, logs } = await replica({ RATE_LIMIT_PER_KEY: '0.1', RATE_LIMIT_BURST: '2' });
    const ws = await ctx.createWorkspace('redis-stopped');
    await redis.stop();
    try {
      for (let i = 0; i < 5; i += 1) {
        const started = performance.now();
        const res = await call(app, ws);
        assert.equal(res.statusCode, 200, res.body);
        assert.ok(performance.now() - started < PROMPT_MS);
      }
      assert.equal(await failOpen(app, 'per-key'), 5, 'five requests went on unlimited (the burst is 2)');
      assert.equal(await connected(app), 0);
      assert.equal(lines(logs, /Redis unreachable/), 1);
    } finally {
      await redis.restart();
    }
    await waitFor(async () => (await connected(app)) === 1, 'reconnected');
    const statuses = [await call(app, ws), await call(app, ws), await call(app, ws)].map((r) => r.statusCode);
    assert.deepEqual(statuses, [200, 200, 429], 'limited again, from a full bucket in the new Redis');
    assert.equal(lines(logs, /Redis reachable again/), 1);
  });
});
