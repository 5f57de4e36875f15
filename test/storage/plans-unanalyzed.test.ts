import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/storage/database.ts';
import { runImportBatch } from '../../src/core/users/imports-service.ts';
import { claimDueDeliveries, recordSuccesses } from '../../src/storage/deliveries.queries.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { captureStatements, explainStatement } from '../helpers/statements.ts';

/*
 * No hot statement's plan waits for statistics (docs/contract.md, Part B "Listing"; issue of
 * data as it arrives): users arrive through the API and are listed at once, long before
 * autovacuum (PostgreSQL) or our maintenance (PGlite) has analyzed their tables. On a fresh
 * database whose tables were never analyzed, with a few thousand users added through the API,
 * every statement the hot requests send is planned on the index it was written for: no
 * sequential scan of the tables that grow with the workspace.
 */

/** Tables that grow with a workspace: a sequential scan of any of them costs a page its speed. */
const GROWING = ['users', 'user_apps', 'user_counts', 'events', 'webhook_deliveries', 'audit_events', 'user_import_rows'];
const USERS = 2_000;
/** Most rows of one table a hot read may touch: a page of 100 users with their apps, and its walk. */
const ROWS_NEEDED = 400;
/** `q=first123` matches 11 users (First123, First1230–First1239), each read once, in its range. */
const SEARCH_ROWS_NEEDED = 50;
/** A page of 100 audit events read by cursor, and the one after it that says whether more follow. */
const AUDIT_ROWS_NEEDED = 101;
/** One batch of an audit export (1,000 events) and the one past it. */
const EXPORT_BATCH_ROWS_NEEDED = 1001;
/** `GET /events?limit=50`: the 50 events, not the 800 after the cursor. */
const EVENTS_ROWS_NEEDED = 60;

/** Names of the growing tables a plan reads sequentially (plan text of EXPLAIN). */
function sequentialScans(plan: string): string[] {
  return GROWING.filter((table) => new RegExp(`Seq Scan on ${table}\\b`).test(plan));
}

describe(`hot statements on never-analyzed tables use their indexes [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  let db: Database;

  before(async () => {
    ctx = await createTestContext({ WEBHOOK_ALLOW_HTTP: 'true', RATE_LIMIT_PER_KEY: '0' });
    db = ctx.database.db;
    // What is pinned is the plan on tables nothing analyzed yet: on a slow machine PostgreSQL's
    // autovacuum could analyze them while they are seeded, so it is off for them here.
    for (const table of GROWING) await db.execute(sql.raw(`alter table ${table} set (autovacuum_enabled = false)`));
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('plans');
    const other = await ctx.createWorkspace('plans-other');
    // An endpoint, so that every change also queues a delivery; nothing sends them here.
    const endpoint = await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url: 'http://127.0.0.1:9/hook' });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    for (let i = 0; i < USERS; i += 1) {
      const apps = i % 3 === 0 ? [] : [{ name: 'crm', role: 'member' }, { name: 'analytics', role: 'viewer' }];
      const added = await ctx.api(ws, 'POST', '/users', { body: userBody(`u${i}@example.com`, { apps, first_name: `First${i}`, last_name: `Last${i}` }) });
      assert.equal(added.statusCode, 201, added.body);
      if (i % 10 === 0) await ctx.api(other, 'POST', '/users', { body: userBody(`o${i}@example.com`) });
    }
    for (let i = 0; i < USERS; i += 7) assert.equal((await ctx.api(ws, 'DELETE', `/users/u${i}@example.com`)).statusCode, 204);
  });
  after(() => ctx?.close());

  test('the tables were never analyzed', async () => {
    const result = (await db.execute(
      sql`select relname from pg_stat_user_tables where last_analyze is not null or last_autoanalyze is not null`,
    )) as unknown as { rows: Array<{ relname: string }> };
    assert.deepEqual(result.rows.filter((r) => GROWING.includes(r.relname)), []);
  });

  /**
   * The hot operations, each with the most rows of one growing table it may read. A page
   * within 2,048 rows of an end of the listing walks to it on purpose (users.queries.ts), with
   * or without a status. The `q=` search reads the three prefix-index ranges and the matching
   * users (a dozen here), not the workspace; the events feed reads the first `limit` events
   * after the cursor in index order, not every event after it (docs/performance.md, "Fast on
   * data as it arrives").
   */
  const operations: Array<[string, () => Promise<unknown>, number?]> = [
    ['GET /users page 1', () => ctx.api(ws, 'GET', '/users')],
    ['GET /users page 5 of 100', () => ctx.api(ws, 'GET', '/users', { query: { page_number: '5', page_size: '100' } }), 500 + ROWS_NEEDED],
    ['GET /users?status=all page 5 of 100', () => ctx.api(ws, 'GET', '/users', { query: { page_number: '5', page_size: '100', status: 'all' } }), 500 + ROWS_NEEDED],
    ['GET /users?status=deactivated', () => ctx.api(ws, 'GET', '/users', { query: { status: 'deactivated', page_number: '2', page_size: '50' } })],
    ['GET /users?q=', () => ctx.api(ws, 'GET', '/users', { query: { q: 'first123' } }), SEARCH_ROWS_NEEDED],
    ['GET /users?q= of 111 users, by email', () => ctx.api(ws, 'GET', '/users', { query: { q: 'First12', sort: 'email', page_size: '50' } }), ROWS_NEEDED],
    ['GET /users/:email', () => ctx.api(ws, 'GET', '/users/u1500@example.com')],
    ['POST /users', () => ctx.api(ws, 'POST', '/users', { body: userBody('new@example.com') })],
    ['PATCH /users/:email', () => ctx.api(ws, 'PATCH', '/users/u1501@example.com', { body: { user: { first_name: 'Changed', apps: [{ name: 'helpdesk', role: 'agent' }] } } })],
    ['DELETE /users/:email', () => ctx.api(ws, 'DELETE', '/users/u1502@example.com')],
    ['SCIM userName eq', () => ctx.app.inject({ method: 'GET', url: `/scim/v2/Users?filter=${encodeURIComponent('userName eq "u1503@example.com"')}`, headers: { host: ws.host, authorization: `Bearer ${ws.apiKey}` } })],
    ['GET /events', () => ctx.api(ws, 'GET', '/events', { query: { after: '1500', limit: '50' } }), EVENTS_ROWS_NEEDED],
    ['the delivery claim', () => claimDueDeliveries(db, { inFlight: new Map(), maxEndpoints: 10, perEndpoint: 4, leaseMs: 1 })],
    ['recording delivery successes', async () => {
      const claimed = await claimDueDeliveries(db, { inFlight: new Map(), maxEndpoints: 10, perEndpoint: 4, leaseMs: 60_000 });
      assert.equal(claimed.length, 4);
      const attempt = { attempted_at: new Date().toISOString(), response_status: 204, error: null, duration_ms: 3 };
      assert.equal((await recordSuccesses(db, claimed.map((delivery) => ({ delivery, attempt })))).size, 4);
    }],
    // A batch of an import job: its emails' users found and locked by the email index, whatever the workspace's size.
    ['an import batch of 100 rows, half of them known emails', async () => {
      const rows = Array.from({ length: 100 }, (_, i) => (i < 50 ? `u${1600 + i}@example.com,non_owner,,,` : `imported${i}@example.com,non_owner,,,`));
      const upload = await ctx.api(ws, 'POST', '/users/imports', { body: ['email,role,first_name,last_name,apps', ...rows].join('\n'), headers: { 'content-type': 'text/csv' } });
      assert.equal(upload.statusCode, 202, upload.body);
      const claim = await ctx.store.imports.claim('plans-test', 60_000);
      assert.ok(claim, 'the job is claimed');
      assert.equal(await runImportBatch(ctx.store, claim, 'plans-test', 100, 60_000), 'more');
    }],
    // The audit trail by cursor: the page and one event more, from either end, not the events past the cursor.
    ['GET /audit-events by cursor, oldest first', () => ctx.api(ws, 'GET', '/audit-events', { query: { sort: 'occurred_at', starting_after: '0', page_size: '100' } }), AUDIT_ROWS_NEEDED],
    ['GET /audit-events by cursor, newest first', () => ctx.api(ws, 'GET', '/audit-events', { query: { starting_after: String(Number.MAX_SAFE_INTEGER), page_size: '100' } }), AUDIT_ROWS_NEEDED],
    ['GET /admin/v1/audit-events by cursor', () => ctx.admin('GET', '/audit-events?starting_after=0&page_size=100'), AUDIT_ROWS_NEEDED],
    // An export reads every event, but batch by batch on the index: no statement reads more than a batch.
    ['GET /audit-events/export', () => ctx.api(ws, 'GET', '/audit-events/export'), EXPORT_BATCH_ROWS_NEEDED],
  ];

  for (const [name, run, rowsNeeded = ROWS_NEEDED] of operations) {
    test(`${name}: no sequential scan of a growing table, no more rows read than it needs`, async () => {
      const statements = await captureStatements(db, run);
      assert.ok(statements.length > 0, 'the operation sent statements');
      for (const statement of statements) {
        const { plan, read } = await explainStatement(db, statement);
        const shown = `${statement.text}\n${plan}\nread: ${JSON.stringify([...read])}`;
        assert.deepEqual(sequentialScans(plan), [], shown);
        for (const table of GROWING) {
          const counted = read.get(table);
          assert.equal(counted?.seqScans ?? 0, 0, `a sequential scan of ${table} while it ran\n${shown}`);
          // A page is 100 rows at most; a whole workspace is USERS.
          assert.ok((counted?.rows ?? 0) <= rowsNeeded, `${counted?.rows} rows of ${table} read\n${shown}`);
        }
      }
    });
  }
});
