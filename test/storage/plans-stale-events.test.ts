import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/storage/database.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { captureStatements, explainStatement } from '../helpers/statements.ts';

/*
 * The events feed on statistics taken when its tables held a few rows (docs/performance.md,
 * "Fast on data as it arrives"): `events` analyzed at 20 events, then hundreds more added
 * through the API, autovacuum off so that nothing analyzes them again. The cursor then lies
 * past every sequence the statistics know, and the planner expects one event after it. The
 * page's workspace (its subdomain) must still be read once, not once per event returned: as a
 * join, that estimate had the planner scan `workspaces` again for each of the 50 events.
 */

const FIRST = 20;
const USERS = 300;
const LIMIT = 50;

describe(`GET /events on statistics taken at a few events [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  let db: Database;

  before(async () => {
    ctx = await createTestContext({ RATE_LIMIT_PER_KEY: '0' });
    db = ctx.database.db;
    for (const table of ['users', 'user_apps', 'user_counts', 'events', 'workspaces']) {
      await db.execute(sql.raw(`alter table ${table} set (autovacuum_enabled = false)`));
    }
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('stale-events');
    await ctx.createWorkspace('stale-events-other');
    for (let i = 0; i < USERS; i += 1) {
      if (i === FIRST) await db.execute(sql`analyze`);
      const added = await ctx.api(ws, 'POST', '/users', { body: userBody(`u${i}@example.com`) });
      assert.equal(added.statusCode, 201, added.body);
    }
  });
  after(() => ctx?.close());

  test('the events after a cursor past the statistics read the workspace once', async () => {
    const cursor = USERS - 2 * LIMIT;
    let response: Awaited<ReturnType<TestContext['api']>> | undefined;
    const statements = await captureStatements(db, async () => {
      response = await ctx.api(ws, 'GET', '/events', { query: { after: String(cursor), limit: String(LIMIT) } });
    });
    assert.equal(response?.statusCode, 200, response?.body);
    const body = JSON.parse(response!.body) as { events: Array<{ sequence: number; workspace: string }> };
    assert.deepEqual(
      body.events.map((event) => event.sequence),
      Array.from({ length: LIMIT }, (_, i) => cursor + 1 + i),
    );
    const feed = statements.filter((statement) => /\bfrom events\b/i.test(statement.text));
    assert.equal(feed.length, 1, statements.map((s) => s.text).join('\n'));
    const { plan, read } = await explainStatement(db, feed[0]!);
    assert.ok((read.get('workspaces')?.rows ?? 0) <= 2, `${read.get('workspaces')?.rows} rows of workspaces read\n${plan}`);
    assert.ok((read.get('events')?.rows ?? 0) <= LIMIT, `${read.get('events')?.rows} rows of events read\n${plan}`);
  });
});
