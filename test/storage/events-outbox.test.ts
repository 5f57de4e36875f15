import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { asc, eq } from 'drizzle-orm';
import { events, workspaces } from '../../src/storage/schema.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

interface StoredEvent {
  sequence: number;
  id: string;
  type: string;
  data: { user: Record<string, unknown>; previous?: Record<string, unknown> };
}

describe(`the outbox: an event with every user change [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  async function eventsOf(ws: TestWorkspace): Promise<StoredEvent[]> {
    const [row] = await ctx.database.db.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.subdomain, ws.subdomain));
    const rows = await ctx.database.db
      .select()
      .from(events)
      .where(eq(events.workspaceId, row!.id))
      .orderBy(asc(events.sequence));
    return rows.map((r) => ({ sequence: Number(r.sequence), id: r.id, type: r.type, data: r.data as StoredEvent['data'] }));
  }

  test('created, updated, deactivated, reactivated: in order, sequences 1, 2, 3…, data = the user after and the fields before', async () => {
    const ws = await ctx.createWorkspace();
    const created = await ctx.api(ws, 'POST', '/users', { body: userBody('ev@example.com', { first_name: 'Eve' }) });
    const updated = await ctx.api(ws, 'PATCH', '/users/ev@example.com', { body: { user: { role: 'owner', apps: [] } } });
    await ctx.api(ws, 'POST', '/users', { body: userBody('other@example.com', { role: 'owner' }) });
    assert.equal((await ctx.api(ws, 'DELETE', '/users/ev@example.com')).statusCode, 204);
    const back = await ctx.api(ws, 'POST', '/users', { body: userBody('EV@example.com', { role: 'non_owner' }) });
    assert.equal(back.statusCode, 201);

    const stored = await eventsOf(ws);
    assert.deepEqual(stored.map((e) => [e.sequence, e.type]), [
      [1, 'user.created'],
      [2, 'user.updated'],
      [3, 'user.created'],
      [4, 'user.deactivated'],
      [5, 'user.reactivated'],
    ]);
    for (const e of stored) assert.match(e.id, /^evt_[0-9a-f]{32}$/);
    assert.equal(new Set(stored.map((e) => e.id)).size, stored.length, 'ids are unique');

    assert.deepEqual(stored[0]!.data, { user: json<'User'>(created) }, 'the created user exactly as the API answered');
    assert.deepEqual(stored[1]!.data.user, json<'User'>(updated));
    assert.deepEqual(stored[1]!.data.previous, { role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] });
    assert.deepEqual(stored[3]!.data.previous, { status: 'active' });
    assert.equal(stored[3]!.data.user.status, 'deactivated');
    assert.deepEqual(stored[4]!.data.user, back.json());
    assert.deepEqual(stored[4]!.data.previous, { role: 'owner', apps: [], status: 'deactivated' });
  });

  test('no event for a change that changes nothing or fails', async () => {
    const ws = await ctx.createWorkspace();
    await ctx.api(ws, 'POST', '/users', { body: userBody('solo@example.com', { role: 'owner' }) });
    await ctx.api(ws, 'PATCH', '/users/solo@example.com', { body: { user: {} } });
    assert.equal((await ctx.api(ws, 'PATCH', '/users/solo@example.com', { body: { user: { role: 'non_owner' } } })).statusCode, 409);
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('solo@example.com') })).statusCode, 409);
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('x@example.com', { apps: [{ name: 'nope', role: 'x' }] }) })).statusCode, 422);
    assert.deepEqual((await eventsOf(ws)).map((e) => e.type), ['user.created']);
  });

  test('concurrent changes in one workspace get distinct, gap-free sequences; workspaces count apart', async () => {
    const ws = await ctx.createWorkspace();
    const other = await ctx.createWorkspace();
    await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => ctx.api(ws, 'POST', '/users', { body: userBody(`c${i}@example.com`) })),
      ...Array.from({ length: 5 }, (_, i) => ctx.api(other, 'POST', '/users', { body: userBody(`o${i}@example.com`) })),
    ]);
    assert.deepEqual((await eventsOf(ws)).map((e) => e.sequence), Array.from({ length: 20 }, (_, i) => i + 1));
    assert.deepEqual((await eventsOf(other)).map((e) => e.sequence), [1, 2, 3, 4, 5]);
  });
});
