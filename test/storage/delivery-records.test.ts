import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/storage/database.ts';
import { claimDueDeliveries, recordSuccesses } from '../../src/storage/deliveries.queries.ts';
import { rowsOf } from '../../src/storage/rows.ts';
import { openFreshStore } from '../helpers/fresh-database.ts';
import { BACKEND, createTestContext, userBody, type TestContext } from '../helpers/test-context.ts';

/*
 * Recording a batch of successful webhook deliveries (docs/contract.md Part B, Events and
 * webhooks): each delivery is recorded only while it is still as claimed, whatever else the
 * batch holds.
 */
describe(`recording delivered webhooks in a batch [${BACKEND}]`, () => {
  let ctx: TestContext;
  let db: Database;

  before(async () => {
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true' });
    db = ctx.database.db;
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  const stored = async (id: string) => {
    const [row] = rowsOf<{ status: string; attempts: number; log: number; last_response_status: number | null }>(
      await db.execute(sql`select status, attempts, jsonb_array_length(attempt_log) as log, last_response_status
        from webhook_deliveries where id = ${id}::uuid`),
    );
    return row;
  };

  test('a delivery changed since its claim is left as it is; the others of the batch succeed', async () => {
    const ws = await ctx.createWorkspace();
    const endpoint = await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url: 'http://127.0.0.1:9/hook' });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) {
      assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(email) })).statusCode, 201);
    }
    const claimed = await claimDueDeliveries(db, { inFlight: new Map(), maxEndpoints: 10, perEndpoint: 10, leaseMs: 60_000 });
    assert.equal(claimed.length, 3);
    // Redelivered while its attempt ran: a new streak, which this attempt's answer must not end.
    const [changed, ...kept] = claimed;
    await db.execute(sql`update webhook_deliveries set attempts = 4, next_attempt_at = now() where id = ${changed!.id}::uuid`);

    const attempt = { attempted_at: new Date().toISOString(), response_status: 204, error: null, duration_ms: 12 };
    const recorded = await recordSuccesses(db, claimed.map((delivery) => ({ delivery, attempt })));

    assert.deepEqual([...recorded].sort(), kept.map((d) => d.id).sort());
    for (const delivery of kept) {
      assert.deepEqual(await stored(delivery.id), { status: 'succeeded', attempts: 1, log: 1, last_response_status: 204 });
    }
    assert.deepEqual(await stored(changed!.id), { status: 'pending', attempts: 4, log: 0, last_response_status: null });
    // Recording the same batch again records nothing: none is as claimed any more.
    assert.equal((await recordSuccesses(db, claimed.map((delivery) => ({ delivery, attempt })))).size, 0);
  });

  test('batches of one keep the statement\'s generic plan: planned once per connection, not on every call', async () => {
    // One connection, so that this session's prepared statements are the pool's.
    const fresh = await openFreshStore(1);
    try {
      const attempt = { attempted_at: new Date().toISOString(), response_status: 204, error: null, duration_ms: 3 };
      const success = (n: number) => ({
        delivery: { workspaceId: 1, id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, endpointId: 'e', url: 'http://127.0.0.1:9/', secrets: [], attempts: 0, event: undefined! },
        attempt,
      });
      // PostgreSQL plans a prepared statement anew for its first five executions, then keeps
      // its generic plan unless each call's own plan looked cheaper.
      for (let n = 1; n <= 10; n += 1) assert.equal((await recordSuccesses(fresh.database.db, [success(n)])).size, 0);
      const [plans] = rowsOf<{ generic_plans: number | string; custom_plans: number | string }>(
        await fresh.database.db.execute(sql`select generic_plans, custom_plans from pg_prepared_statements where name = 'wum_deliveries_succeeded'`),
      );
      assert.ok(plans, 'the statement is prepared on the connection');
      assert.equal(Number(plans.custom_plans), 5);
      assert.equal(Number(plans.generic_plans), 5);
    } finally {
      await fresh.close();
    }
  });
});
