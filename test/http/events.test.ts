import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { pruneEvents } from '../../src/storage/events.queries.ts';
import { events, workspaces } from '../../src/storage/schema.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, userData } from '../helpers/json.ts';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe(`GET /events: the pull feed [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  async function feed(ws: TestWorkspace, query: Record<string, string> = {}) {
    const res = await ctx.api(ws, 'GET', '/events', { query });
    assert.equal(res.statusCode, 200, res.body);
    return json<'listEvents'>(res);
  }

  async function workspaceId(ws: TestWorkspace): Promise<number> {
    const [row] = await ctx.database.db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.subdomain, ws.subdomain));
    return Number(row!.id);
  }

  test('every change in sequence order, in the shape of docs/contract.md: id, type, sequence, created_at, workspace, data', async () => {
    const ws = await ctx.createWorkspace('ev');
    const added = await ctx.api(ws, 'POST', '/users', { body: userBody('feed@example.com', { role: 'owner' }) });
    await ctx.api(ws, 'PATCH', '/users/feed@example.com', { body: { user: { first_name: 'Fe' } } });
    await ctx.api(ws, 'POST', '/users', { body: userBody('two@example.com') });
    await ctx.api(ws, 'DELETE', '/users/two@example.com');
    await ctx.api(ws, 'POST', '/users', { body: userBody('two@example.com') });

    const { events: listed, next_after } = await feed(ws);
    assert.deepEqual(listed.map((e) => [e.sequence, e.type]), [
      [1, 'user.created'],
      [2, 'user.updated'],
      [3, 'user.created'],
      [4, 'user.deactivated'],
      [5, 'user.reactivated'],
    ]);
    assert.equal(next_after, 5);
    const [first, second] = listed;
    assert.deepEqual(Object.keys(first!).sort(), ['actor', 'created_at', 'data', 'id', 'sequence', 'type', 'workspace']);
    assert.deepEqual(first!.actor, { type: 'api_key', id: ws.apiKeyId, label: ws.apiKey.slice(0, 12) }, 'the key that made the change');
    assert.match(first!.id, /^evt_[0-9a-f]{32}$/);
    assert.match(first!.created_at, TIMESTAMP);
    assert.deepEqual(first!.workspace, { subdomain: ws.subdomain });
    assert.deepEqual(first!.data, { user: json<'addUser'>(added) });
    assert.deepEqual(userData(second!).previous, { first_name: '-' });
    assert.equal(userData(second!).user.first_name, 'Fe');
  });

  test('after and limit page through the feed; past the end: empty, next_after = after', async () => {
    const ws = await ctx.createWorkspace('ev');
    for (let i = 0; i < 5; i += 1) await ctx.api(ws, 'POST', '/users', { body: userBody(`p${i}@example.com`) });
    const page = await feed(ws, { after: '1', limit: '2' });
    assert.deepEqual(page.events.map((e) => e.sequence), [2, 3]);
    assert.equal(page.next_after, 3);
    assert.deepEqual((await feed(ws, { after: '3' })).events.map((e) => e.sequence), [4, 5]);
    assert.deepEqual(await feed(ws, { after: '5' }), { events: [], next_after: 5 });
    assert.deepEqual(await feed(ws, { after: '999999999' }), { events: [], next_after: 999999999 });
    assert.equal((await feed(ws, { limit: '1000' })).events.length, 5);
  });

  test('a bad after or limit → 400 invalid_parameter', async () => {
    const ws = await ctx.createWorkspace('ev');
    for (const query of [{ after: '-1' }, { after: 'abc' }, { after: '1.5' }, { after: '' }, { after: '99999999999999999999' }, { limit: '0' }, { limit: '1001' }, { limit: 'ten' }] as Array<Record<string, string>>) {
      const res = await ctx.api(ws, 'GET', '/events', { query });
      assert.equal(res.statusCode, 400, `${JSON.stringify(query)}: ${res.body}`);
      assert.equal(json<'Problem'>(res).code, 'invalid_parameter');
    }
  });

  test('a workspace sees only its own events; a missing or foreign key is refused', async () => {
    const a = await ctx.createWorkspace('ev');
    const b = await ctx.createWorkspace('ev');
    await ctx.api(a, 'POST', '/users', { body: userBody('a-only@example.com') });
    assert.deepEqual((await feed(b)).events, []);
    assert.equal(json<'Problem'>(await ctx.api(a, 'GET', '/events', { noKey: true })).code, 'missing_api_key');
    assert.equal(json<'Problem'>(await ctx.api({ ...a, apiKey: b.apiKey }, 'GET', '/events')).code, 'invalid_api_key');
    assert.equal((await ctx.api(a, 'POST', '/events', { body: {} })).statusCode, 405);
  });

  test('retention: events older than 30 days are pruned in batches; newer ones stay', async () => {
    const ws = await ctx.createWorkspace('ev');
    for (let i = 0; i < 5; i += 1) await ctx.api(ws, 'POST', '/users', { body: userBody(`old${i}@example.com`) });
    const id = await workspaceId(ws);
    await ctx.database.db
      .update(events)
      .set({ createdAt: sql`now() - interval '31 days'` })
      .where(sql`${events.workspaceId} = ${id} and ${events.sequence} <= 3`);
    assert.equal(await pruneEvents(ctx.database.db, 30, 2), 2, 'one batch of two');
    assert.equal(await pruneEvents(ctx.database.db, 30, 2), 1);
    assert.equal(await pruneEvents(ctx.database.db, 30, 2), 0);
    assert.deepEqual((await feed(ws)).events.map((e) => e.sequence), [4, 5]);
  });
});
