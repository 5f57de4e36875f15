// one backend: postgres: concurrent transactions on PostgreSQL (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { startJsonLinesReceiver, type StreamReceiver } from '../../harness/stream-receivers.ts';
import { BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';
import { startTestStreamWorker, type TestStreamWorker } from '../helpers/stream-worker.ts';

/*
 * A row that commits after one with a greater audit id is still streamed, in audit order
 * (docs/operations.md, "Audit streams"; the settled horizon, core/audit-streams/settled-horizon.ts).
 * Two writers on their own connections: the second takes its transaction id first, the first
 * then takes the lower audit id, the second the greater one and commits, and the first stays
 * open, between two statements, holding no snapshot. A reader that passed the gap would send
 * the greater id and never the lower; the stream must wait, then send both in order.
 * PostgreSQL only: PGlite serves one connection, on which two transactions never interleave.
 */

const ENV = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_TIMEOUT_MS: '5000', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' };
/** How long the first writer stays open after the second committed: several of the worker's passes (250 ms each). */
const HELD_OPEN_MS = 2_000;

if (BACKEND === 'postgres') {
  describe(`audit streams: a lower audit id that commits later is still sent first [${BACKEND}]`, () => {
    let ctx: TestContext;
    let ws: TestWorkspace;
    let receiver: StreamReceiver;
    let worker: TestStreamWorker | undefined;
    const clients: pg.Client[] = [];

    before(async () => {
      ctx = await createTestContext(ENV);
      ws = await ctx.createWorkspace('order');
      receiver = await startJsonLinesReceiver();
    });
    after(async () => {
      await worker?.stop();
      await Promise.all(clients.map((c) => c.end()));
      await receiver?.close();
      await ctx?.close();
    });

    test('the stream waits for the open writer, then delivers both ids in audit order', { timeout: 60_000 }, async () => {
      const created = await ctx.api(ws, 'POST', '/audit-streams', { body: { name: 'SIEM', format: 'json', destination: { type: 'https', url: receiver.url } } });
      assert.equal(created.statusCode, 201, created.body);
      worker = startTestStreamWorker(ctx, { timeoutMs: 5000, pauseAfterMs: 3_600_000 });
      const [first, second] = [await ctx.database.connect!(), await ctx.database.connect!()];
      clients.push(first, second);
      const workspaceId = Number((await first.query<{ id: string }>('select id from workspaces where subdomain = $1', [ws.subdomain])).rows[0]!.id);
      const insertRow = async (client: pg.Client, target: string) =>
        Number(
          (
            await client.query<{ id: string }>(
              `insert into audit_events (workspace_id, actor_type, action, target_type, target_id) values ($1, 'system', 'user.updated', 'user', $2) returning id`,
              [workspaceId, target],
            )
          ).rows[0]!.id,
        );

      await second.query('begin');
      await second.query('select pg_current_xact_id()');
      await first.query('begin');
      const lower = await insertRow(first, 'lower@example.com');
      const greater = await insertRow(second, 'greater@example.com');
      assert.ok(lower < greater);
      await second.query('commit');
      await first.query('select 1');

      await sleep(HELD_OPEN_MS);
      const sentWhileOpen = receiver.rows().map((r) => r.id);
      assert.ok(!sentWhileOpen.includes(greater), `audit id ${greater} was sent while the lower ${lower} was not yet committed: ${JSON.stringify(sentWhileOpen)}`);

      await first.query('commit');
      const deadline = Date.now() + 20_000;
      while (!receiver.rows().some((r) => r.id === greater)) {
        assert.ok(Date.now() < deadline, `audit id ${greater} never arrived; got ${JSON.stringify(receiver.rows().map((r) => r.id))}`);
        await sleep(100);
      }
      const ids = receiver.rows().map((r) => r.id);
      assert.deepEqual(ids.filter((id) => id === lower || id === greater), [lower, greater], 'both, once each, in audit order');
      // The cursor moves once the receiver has answered, in the statement that releases the claim.
      const streamCursor = async () => json<'getOwnAuditStream'>(await ctx.api(ws, 'GET', `/audit-streams/${json<'createOwnAuditStream'>(created).id}`)).cursor;
      while ((await streamCursor()) < greater) {
        assert.ok(Date.now() < deadline, 'the cursor reaches the greater id');
        await sleep(100);
      }
    });
  });
}
