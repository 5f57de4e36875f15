import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { startTestStreamWorker, type TestStreamWorker } from '../helpers/stream-worker.ts';
import { startJsonLinesReceiver, type StreamReceiver } from '../../harness/stream-receivers.ts';
import { API, BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Several replicas deliver each batch of a stream once at a time (docs/api.md, "Audit streams";
 * docs/operations.md, "Audit streams"): two app instances on one database, each with a stream
 * worker of its own (its own queue, its own metrics), as two server processes have; changes are
 * made through both apps while one stream sends to a receiver that answers slowly, so that a
 * second claim of the stream while a batch is in flight would show as two requests open at
 * once. On PostgreSQL the workers' statements run on separate connections of the pool, at the
 * same time; PGlite serves one process and one connection, where the claim's lease alone keeps
 * them apart.
 */

const ENV = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_TIMEOUT_MS: '5000', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' };
const USERS = 60;
/** How long the receiver holds each batch: longer than a worker's poll (250 ms), so the other worker polls while a batch is out. */
const RECEIVER_DELAY_MS = 300;

describe(`audit streams: two workers on one database deliver a stream's batches one at a time [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  let receiver: StreamReceiver;
  let second: FastifyInstance;
  const registries = [new Registry(), new Registry()];
  const workers: TestStreamWorker[] = [];

  before(async () => {
    ctx = await createTestContext(ENV);
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('replicas');
    receiver = await startJsonLinesReceiver();
    receiver.delay(RECEIVER_DELAY_MS);
    second = await ctx.buildApp();
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await receiver?.close();
    await ctx?.close();
  });

  /** `POST /users` through `app` (the first or the second instance). */
  async function addUser(app: FastifyInstance, email: string): Promise<void> {
    const res = await app.inject({ method: 'POST', url: `${API}/users`, headers: { host: ws.host, 'x-api-key': ws.apiKey }, payload: userBody(email) });
    assert.equal(res.statusCode, 201, res.body);
  }

  async function streamState(id: string): Promise<{ cursor: number; lag_rows: number; status: string }> {
    const res = await ctx.api(ws, 'GET', `/audit-streams/${id}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  }

  test('no two batches in flight at once, the cursor only moves forward, every audit id arrives once and in order', { timeout: 120_000 }, async (t) => {
    const created = await ctx.api(ws, 'POST', '/audit-streams', { body: { name: 'SIEM', format: 'json', destination: { type: 'https', url: receiver.url } } });
    assert.equal(created.statusCode, 201, created.body);
    const stream = created.json() as { id: string; cursor: number };
    for (const registry of registries) {
      workers.push(
        startTestStreamWorker(ctx, { timeoutMs: 5000, pauseAfterMs: 3_600_000, registry }),
      );
    }

    // The cursor as the API shows it, read all along: it must never go back.
    const cursors: number[] = [];
    let writing = true;
    const watcher = (async () => {
      while (writing) {
        cursors.push((await streamState(stream.id)).cursor);
        await sleep(50);
      }
    })();
    // Two writers, one per app instance, so rows arrive while batches are out.
    await Promise.all(
      [ctx.app, second].map(async (app, w) => {
        for (let i = w; i < USERS; i += 2) await addUser(app, `replica${i}@example.com`);
      }),
    );
    // One reader at a time: two reads in flight together may resolve in the other order, which
    // would look like a cursor going back.
    writing = false;
    await watcher;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const state = await streamState(stream.id);
      cursors.push(state.cursor);
      if (state.lag_rows === 0 && receiver.received.length > 0) break;
      assert.ok(Date.now() < deadline, `the stream did not catch up: ${JSON.stringify(state)}`);
      await sleep(100);
    }

    assert.equal(receiver.peakInFlight(), 1, 'never two batches of the stream in flight at once');
    for (let i = 1; i < cursors.length; i += 1) assert.ok(cursors[i]! >= cursors[i - 1]!, `the cursor went back from ${cursors[i - 1]} to ${cursors[i]}`);

    const listed = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`);
    assert.equal(listed.statusCode, 200, listed.body);
    const expected = json<{ audit_events: Array<{ id: number }> }>(listed).audit_events.map((e) => e.id).filter((id) => id > stream.cursor).sort((a, b) => a - b);
    assert.ok(expected.length >= USERS);
    assert.deepEqual(receiver.rows().map((r) => r.id), expected, 'every audit id once, in audit order: no batch was sent by both workers');
    // Each batch starts after the one before ended (webhook-id `ast_<stream>_<first>_<last>`).
    const ranges = receiver.received.map((r) => (r.headers['webhook-id'] as string).split('_').slice(2).map(Number) as [number, number]);
    for (let i = 1; i < ranges.length; i += 1) assert.ok(ranges[i]![0] > ranges[i - 1]![1], `batch ${i} overlaps the one before: ${JSON.stringify(ranges.slice(i - 1, i + 1))}`);

    const delivered = await Promise.all(
      registries.map(async (registry) => Number(/^wum_audit_stream_rows_delivered_total\{[^}]*\} (\d+)/m.exec(await registry.metrics())?.[1] ?? 0)),
    );
    t.diagnostic(`${receiver.received.length} batches; rows delivered by each worker: ${delivered.join(', ')}`);
    assert.equal(delivered[0]! + delivered[1]!, expected.length, 'the two workers\' counts add up to the rows, each counted once');
  });
});
