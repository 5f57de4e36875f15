import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app.ts';
import { webhookUrlCheck } from '../../src/webhooks/url-guard.ts';
import { createIdempotencyStore } from '../../src/storage/idempotency.queries.ts';
import { ReadCache } from '../../src/storage/read-cache.ts';
import { createStore } from '../../src/storage/store.ts';
import { API, BACKEND, createTestContext, testConfig, testKeyRing, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { testClock } from '../helpers/test-clock.ts';
import { json } from '../helpers/json.ts';

/*
 * Verified API keys and the product catalogue are served from process memory for
 * CACHE_TTL_MS (docs/performance.md). A change made through a process applies there at once; a change
 * made through another process (here: a second app over its own store on the same database)
 * applies after at most the TTL.
 */

// Long enough that only advancing the clock, never a slow machine, ages an entry past it.
const OTHER_TTL_MS = 60_000;

describe(`read cache of keys and catalogue [${BACKEND}]`, () => {
  let ctx: TestContext;
  /** Another "process": its own store and cache over the same database, with its own clock. */
  let other: FastifyInstance;
  /** The clock `other`'s cache ages by: moved past the TTL instead of waiting for it. */
  const otherClock = testClock();
  const apps: FastifyInstance[] = [];

  async function anotherProcess(cacheTtlMs: number, cacheClock?: () => number): Promise<FastifyInstance> {
    const app = await buildApp(testConfig(), {
      checkWebhookUrl: webhookUrlCheck(testConfig().webhooks),
      store: createStore(ctx.database.db, { cacheTtlMs, keyRing: testKeyRing(), ...(cacheClock ? { cacheClock } : {}) }),
      idempotency: createIdempotencyStore(ctx.database.db),
      ping: ctx.database.ping,
      logger: false,
    });
    await app.ready();
    apps.push(app);
    return app;
  }

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    other = await anotherProcess(OTHER_TTL_MS, otherClock.now);
  });
  after(async () => {
    for (const app of apps) await app.close();
    await ctx.close();
  });

  const listVia = (app: FastifyInstance, ws: TestWorkspace, key = ws.apiKey) =>
    app.inject({ method: 'GET', url: `${API}/users`, headers: { host: ws.host, 'x-api-key': key } });
  const productsVia = (app: FastifyInstance, ws: TestWorkspace) =>
    app.inject({ method: 'GET', url: `${API}/products`, headers: { host: ws.host, 'x-api-key': ws.apiKey } });

  test('a key revoked through this process is refused at once, though it was just verified', async () => {
    const ws = await ctx.createWorkspace('revoke-here');
    assert.equal((await listVia(ctx.app, ws)).statusCode, 200);
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${ws.apiKeyId}`)).statusCode, 204);
    assert.equal(json<'Problem'>(await listVia(ctx.app, ws)).code, 'invalid_api_key');
  });

  test('a key revoked through another process is refused here within the TTL', async () => {
    const ws = await ctx.createWorkspace('revoke-there');
    assert.equal((await listVia(other, ws)).statusCode, 200, 'verified, and cached, by the other process');
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${ws.apiKeyId}`)).statusCode, 204);
    otherClock.advance(OTHER_TTL_MS + 100);
    assert.equal(json<'Problem'>(await listVia(other, ws)).code, 'invalid_api_key');
  });

  test('a new key works at once everywhere: refusals are not cached', async () => {
    const ws = await ctx.createWorkspace('new-key');
    const created = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`);
    const fresh = json<'createApiKey'>(created).key as string;
    assert.equal((await listVia(other, ws, fresh)).statusCode, 200);
    assert.equal((await listVia(ctx.app, ws, fresh)).statusCode, 200);
  });

  test('a deleted workspace answers workspace_not_found at once here; a write through a stale process is a 404, never a 500', async () => {
    const ws = await ctx.createWorkspace('deleted');
    const stale = await anotherProcess(600_000);
    assert.equal((await listVia(ctx.app, ws)).statusCode, 200);
    assert.equal((await listVia(stale, ws)).statusCode, 200);
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}`)).statusCode, 204);
    assert.equal(json<'Problem'>(await listVia(ctx.app, ws)).code, 'workspace_not_found');
    const late = await stale.inject({
      method: 'POST',
      url: `${API}/users`,
      headers: { host: ws.host, 'x-api-key': ws.apiKey },
      payload: userBody('late@example.com'),
    });
    assert.equal(late.statusCode, 404, late.body);
    assert.equal(json<'Problem'>(late).code, 'workspace_not_found');
  });

  test('the catalogue: a change through this process shows at once, through another within the TTL', async () => {
    const ws = await ctx.createWorkspace('catalogue');
    const names = (res: { json(): { products: Array<{ name: string }> } }) => res.json().products.map((p) => p.name);
    assert.ok(!names(await productsVia(ctx.app, ws)).includes('billing'));
    assert.ok(!names(await productsVia(other, ws)).includes('billing'));
    assert.equal((await ctx.admin('PUT', '/products/billing', { roles: ['payer'] })).statusCode, 201);
    assert.ok(names(await productsVia(ctx.app, ws)).includes('billing'), 'this process: at once');
    otherClock.advance(OTHER_TTL_MS + 100);
    assert.ok(names(await productsVia(other, ws)).includes('billing'), 'the other process: within the TTL');
    // Adding a user checks the catalogue in the database, never the cache.
    const added = await other.inject({
      method: 'POST',
      url: `${API}/users`,
      headers: { host: ws.host, 'x-api-key': ws.apiKey },
      payload: userBody('payer@example.com', { apps: [{ name: 'billing', role: 'payer' }] }),
    });
    assert.equal(added.statusCode, 201, added.body);
  });

  test('a role removed through another process is refused here at once, though the cached catalogue still lists it; nothing is written', async () => {
    const ws = await ctx.createWorkspace('stale-role');
    const stale = await anotherProcess(600_000);
    assert.equal((await ctx.admin('PUT', '/products/ledger', { roles: ['clerk', 'auditor'] })).statusCode, 201);
    const cached = json<'listProducts'>(await productsVia(stale, ws)).products.find((p: { name: string }) => p.name === 'ledger');
    assert.deepEqual(cached?.roles, ['clerk', 'auditor'], 'the stale process has the catalogue cached');
    assert.equal((await ctx.admin('PUT', '/products/ledger', { roles: ['clerk'] })).statusCode, 200);
    const add = (email: string, role: string) =>
      stale.inject({
        method: 'POST',
        url: `${API}/users`,
        headers: { host: ws.host, 'x-api-key': ws.apiKey },
        payload: userBody(email, { apps: [{ name: 'ledger', role }] }),
      });

    const refused = await add('auditor@example.com', 'auditor');
    assert.equal(refused.statusCode, 422, refused.body);
    assert.equal(json<'Problem'>(refused).code, 'unknown_product_role');
    assert.deepEqual(json<'Problem'>(refused).errors!.map((e: { field: string }) => e.field), ['user.apps[0].role']);
    assert.equal((await ctx.api(ws, 'GET', '/users/auditor@example.com')).statusCode, 404);
    const list = json<'listUsers'>(await ctx.api(ws, 'GET', '/users', { query: { status: 'all' } }));
    assert.equal(list.total_count, 0, 'no user and no count were written');
    const events = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`));
    assert.ok(
      !JSON.stringify(events).includes('auditor@example.com'),
      'no audit event was written for the refused add',
    );

    const kept = await add('clerk@example.com', 'clerk');
    assert.equal(kept.statusCode, 201, kept.body);
  });
});

describe('ReadCache', () => {
  const live = { workspace: { id: 1, subdomain: 'a', name: 'a', createdAt: new Date(0) }, apiKey: { id: 'k', name: '', prefix: 'wum_k', scopes: [], expiresAt: null } };

  test('a look-up that started before an invalidation is answered but not kept', async () => {
    const cache = new ReadCache(60_000);
    let loads = 0;
    let release: () => void = () => {};
    const slow = cache.resolve('a', 'h', async () => {
      loads += 1;
      await new Promise<void>((resolve) => (release = resolve));
      return live;
    });
    cache.invalidate();
    release();
    assert.deepEqual(await slow, live);
    await cache.resolve('a', 'h', async () => {
      loads += 1;
      return live;
    });
    assert.equal(loads, 2, 'the second look-up went to the database');
  });

  test('live keys are kept, unknown ones are not; TTL 0 keeps nothing; invalidate announces', async () => {
    let announced = 0;
    const cache = new ReadCache(60_000, () => (announced += 1));
    let loads = 0;
    const load = (answer: typeof live | { workspace: undefined; apiKey: undefined }) => async () => {
      loads += 1;
      return answer;
    };
    await cache.resolve('a', 'h', load(live));
    await cache.resolve('a', 'h', load(live));
    assert.equal(loads, 1);
    await cache.resolve('a', 'x', load({ workspace: undefined, apiKey: undefined }));
    await cache.resolve('a', 'x', load({ workspace: undefined, apiKey: undefined }));
    assert.equal(loads, 3);
    cache.invalidate();
    assert.equal(announced, 1);
    cache.clear();
    assert.equal(announced, 1, 'clear (a sibling announced) does not announce again');

    const off = new ReadCache(0);
    loads = 0;
    await off.resolve('a', 'h', load(live));
    await off.resolve('a', 'h', load(live));
    assert.equal(loads, 2);
  });
});
