import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/storage/database.ts';
import { claimDueDeliveries, recordSuccesses } from '../../src/storage/deliveries.queries.ts';
import { rowsOf } from '../../src/storage/rows.ts';
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
});
