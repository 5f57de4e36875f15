import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { buildApp } from '../../src/http/app.ts';
import { storageDependencies } from '../../src/server/app-dependencies.ts';
import type { ClaimedDelivery, DeliveryHandOff } from '../../src/core/webhooks/delivery-queue.ts';
import { claimDueDeliveries, createDeliveryQueue, releaseLeases } from '../../src/storage/deliveries.queries.ts';
import { rowsOf } from '../../src/storage/rows.ts';
import { createStore } from '../../src/storage/store.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery-worker.ts';
import { changeRecord } from '../../src/core/users/users-service.ts';
import { BACKEND, createTestContext, testConfig, testKeyRing, userBody, type TestContext } from '../helpers/test-context.ts';

/*
 * A change's webhook deliveries handed to the worker of the process that wrote it
 * (docs/contract.md Part B, Events and webhooks): written leased to that worker, handed over
 * once the change has committed, sent without a claim; given back (due at once) when the worker
 * will not send them; and sent no more than the endpoint's slots allow at a time.
 */
describe(`webhook deliveries handed to the writing process's worker [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  const stored = async (id: string) => {
    const [row] = rowsOf<{ status: string; attempts: number; leased_for_s: number }>(
      await ctx.database.db.execute(sql`select status, attempts, extract(epoch from next_attempt_at - now())::float8 as leased_for_s
        from webhook_deliveries where id = ${id}::uuid`),
    );
    return row;
  };

  /** An app over a store whose writes hand their deliveries to `handOff`. */
  async function appHandingOverTo(handOff: DeliveryHandOff): Promise<FastifyInstance> {
    const config = testConfig({ WEBHOOK_ALLOW_HTTP: 'true' });
    const store = createStore(ctx.database.db, { keyRing: testKeyRing(), deliveryHandOff: handOff });
    const app = await buildApp(config, { ...storageDependencies(config, ctx.database, store), logger: false });
    await app.ready();
    return app;
  }

  test('a committed change hands over its delivery, leased; a claim passes it over until its lease is given back', async () => {
    const ws = await ctx.createWorkspace();
    const endpoint = await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url: 'http://127.0.0.1:9/hook' });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    const taken: ClaimedDelivery[] = [];
    const app = await appHandingOverTo({ leaseMs: () => 60_000, take: (deliveries) => void taken.push(...deliveries) });
    try {
      const res = await app.inject({ method: 'POST', url: '/api/external/v2/users', headers: { host: ws.host, 'x-api-key': ws.apiKey }, payload: userBody('handed@example.com') });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(taken.length, 1);
      const [delivery] = taken;
      assert.equal(delivery!.url, 'http://127.0.0.1:9/hook');
      assert.equal(delivery!.attempts, 0);
      assert.equal(delivery!.event.type, 'user.created');
      assert.equal((delivery!.event.data as { user: { email: string } }).user.email, 'handed@example.com');
      const row = await stored(delivery!.id);
      assert.equal(row!.status, 'pending');
      assert.ok(row!.leased_for_s > 50 && row!.leased_for_s <= 60, `leased for about a minute, got ${row!.leased_for_s} s`);
      // Leased: no claim takes it.
      assert.deepEqual(await claimDueDeliveries(ctx.database.db, { inFlight: new Map(), maxEndpoints: 10, perEndpoint: 10, leaseMs: 60_000 }), []);
      // Given back: the next claim takes it, as written.
      await releaseLeases(ctx.database.db, taken);
      const claimed = await claimDueDeliveries(ctx.database.db, { inFlight: new Map(), maxEndpoints: 10, perEndpoint: 10, leaseMs: 60_000 });
      assert.deepEqual(claimed.map((d) => [d.id, d.attempts, d.event.id]), [[delivery!.id, 0, delivery!.event.id]]);
    } finally {
      await app.close();
    }
  });

  test('a worker that takes none (lease 0): the delivery is written due and nothing is handed over', async () => {
    const ws = await ctx.createWorkspace();
    await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url: 'http://127.0.0.1:9/hook' });
    const taken: ClaimedDelivery[] = [];
    const app = await appHandingOverTo({ leaseMs: () => 0, take: (deliveries) => void taken.push(...deliveries) });
    try {
      const res = await app.inject({ method: 'POST', url: '/api/external/v2/users', headers: { host: ws.host, 'x-api-key': ws.apiKey }, payload: userBody('due@example.com') });
      assert.equal(res.statusCode, 201, res.body);
      assert.deepEqual(taken, []);
      const claimed = await claimDueDeliveries(ctx.database.db, { inFlight: new Map(), maxEndpoints: 10, perEndpoint: 10, leaseMs: 60_000 });
      assert.equal(claimed.filter((d) => d.event.data && (d.event.data as { user: { email: string } }).user.email === 'due@example.com').length, 1);
    } finally {
      await app.close();
    }
  });

  test('more handed over than an endpoint has slots: all sent, never more at once than its slots, none claimed', async () => {
    const ws = await ctx.createWorkspace();
    // A receiver that answers each request after 50 ms, counting how many it holds at once.
    let open = 0;
    let most = 0;
    const ids: string[] = [];
    const server: Server = createServer((req, res) => {
      open += 1;
      most = Math.max(most, open);
      ids.push(String(req.headers['webhook-id']));
      req.resume();
      setTimeout(() => {
        open -= 1;
        res.writeHead(204).end();
      }, 50);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const endpoint = await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    for (let i = 0; i < 8; i += 1) assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(`slot${i}@example.com`) })).statusCode, 201);
    // Leased by a claim of this test, as a write leases them for its worker.
    const leased = await claimDueDeliveries(ctx.database.db, { inFlight: new Map(), maxEndpoints: 10, perEndpoint: 100, leaseMs: 60_000 });
    const mine = leased.filter((d) => d.url === url);
    assert.equal(mine.length, 8);

    const registry = new Registry();
    const config = testConfig({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_CONCURRENCY_PER_ENDPOINT: '2' });
    const worker = startDeliveryWorker({ queue: createDeliveryQueue(ctx.database.db), store: ctx.store, config: config.webhooks, log: ctx.app.log, registry });
    try {
      worker.take(mine);
      const deadline = Date.now() + 20_000;
      for (;;) {
        const states = await Promise.all(mine.map((d) => stored(d.id)));
        if (states.every((s) => s!.status === 'succeeded')) {
          assert.ok(states.every((s) => s!.attempts === 1), JSON.stringify(states));
          break;
        }
        if (Date.now() > deadline) throw new Error(`not all delivered: ${JSON.stringify(states)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(new Set(ids).size, 8, 'each event sent once');
      assert.ok(most <= 2, `at most the endpoint's 2 slots at once, saw ${most}`);
      const metrics = await registry.metrics();
      assert.match(metrics, /^wum_webhook_deliveries_handed_over_total 8$/m);
      assert.doesNotMatch(metrics, /^wum_webhook_claims_total\{found="true"\} [1-9]/m);
    } finally {
      await worker.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test('changes written together: each hands over its own event and that event\'s deliveries, leased', async () => {
    const ws = await ctx.createWorkspace();
    const urls = ['http://127.0.0.1:9/one', 'http://127.0.0.1:9/two'];
    for (const url of urls) assert.equal((await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url })).statusCode, 201);
    const emails = Array.from({ length: 6 }, (_, i) => `together${i}@example.com`);
    for (const email of emails) assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(email) })).statusCode, 201);
    const taken: ClaimedDelivery[] = [];
    const store = createStore(ctx.database.db, { keyRing: testKeyRing(), deliveryHandOff: { leaseMs: () => 60_000, take: (d) => void taken.push(...d) } });
    const workspace = (await store.workspaces.findBySubdomain(ws.subdomain))!;
    const actor = { type: 'api_key' as const, id: 'test', label: 'test', requestId: null };
    const currents = await Promise.all(emails.map((email) => store.users.find(workspace.id, { email })));
    // Submitted at once: the first alone, the others in one statement.
    await Promise.all(
      currents.map((current, i) => {
        const next = { ...current!, firstName: `Handed${i}` };
        return store.users.writeIfUnchanged(workspace.id, current!, next, changeRecord(workspace.id, actor, 'user.updated', current!.id, current!, next));
      }),
    );
    assert.equal(taken.length, 12, 'one delivery per change and endpoint');
    const byEvent = new Map<string, ClaimedDelivery[]>();
    for (const delivery of taken) byEvent.set(delivery.event.id, [...(byEvent.get(delivery.event.id) ?? []), delivery]);
    assert.equal(byEvent.size, 6);
    const handed = [...byEvent.values()].map((deliveries) => {
      const { user } = deliveries[0]!.event.data as { user: { email: string; first_name: string } };
      assert.ok(deliveries.every((d) => d.event.sequence === deliveries[0]!.event.sequence), 'one event per change');
      return [user.email, user.first_name, deliveries.map((d) => d.url).sort()];
    });
    assert.deepEqual(handed.sort(), emails.map((email, i) => [email, `Handed${i}`, urls]).sort());
    for (const delivery of taken) {
      const row = await stored(delivery.id);
      assert.equal(row!.status, 'pending');
      assert.ok(row!.leased_for_s > 50, `leased for about a minute, got ${row!.leased_for_s} s`);
    }
  });
});
