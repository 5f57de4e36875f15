import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import { AppError } from '../../src/core/errors.ts';
import type { Store } from '../../src/core/ports.ts';
import { addUser, deactivateUser, listUsers } from '../../src/core/users/users-service.ts';
import { createWorkspace, deleteWorkspace } from '../../src/core/workspaces/workspaces-service.ts';
import { USER_COUNT_LEVEL_BITS } from '../../src/storage/schema.ts';
import { openFreshStoreWithProducts, type FreshStore } from '../helpers/fresh-database.ts';
import { BACKEND } from '../helpers/test-context.ts';

/*
 * `total_count` comes from per-workspace, per-status counters kept by the same transactions
 * that add, deactivate and reactivate users (docs/performance.md). These tests hold them to the truth,
 * count(*) over the users table, after races of every kind.
 */

let counter = 0;

describe(`exact user counts [${BACKEND}]`, () => {
  let fresh: FreshStore;
  let store: Store;

  before(async () => {
    fresh = await openFreshStoreWithProducts();
    store = fresh.store;
  });
  after(() => fresh.close());

  async function newWorkspace(): Promise<{ id: number; subdomain: string }> {
    counter += 1;
    const { workspace } = await createWorkspace(store, `counts-${counter}`, undefined, SYSTEM_ACTOR);
    return workspace;
  }

  /** count(*) by status, straight from the users table. */
  async function truth(workspaceId: number): Promise<{ active: number; deactivated: number }> {
    const result = (await fresh.database.db.execute(
      sql`select status, count(*)::int as n from users where workspace_id = ${workspaceId} group by status`,
    )) as unknown as { rows: Array<{ status: string; n: number }> };
    const of = (status: string) => Number(result.rows.find((r) => r.status === status)?.n ?? 0);
    return { active: of('active'), deactivated: of('deactivated') };
  }

  async function totals(workspaceId: number) {
    const total = async (status: 'active' | 'deactivated' | 'all') =>
      (await listUsers(store, workspaceId, { status: status }, { pageNumber: 1, pageSize: 1 })).pagination.totalRecords;
    return { active: await total('active'), deactivated: await total('deactivated'), all: await total('all') };
  }

  /** The stored counts, by status, level and block of ids, against count(*) over the users. */
  async function blockCounts(workspaceId: number): Promise<{ stored: string[]; counted: string[] }> {
    const query = async (text: ReturnType<typeof sql>) =>
      ((await fresh.database.db.execute(text)) as unknown as { rows: Array<{ status: string; level: number; block: number; n: number }> }).rows
        .map((r) => `${r.status}/${r.level}/${r.block}: ${r.n}`);
    return {
      stored: await query(sql`select status, level::int as level, block::int as block, sum(user_count)::int as n from user_counts
        where workspace_id = ${workspaceId} group by status, level, block having sum(user_count) <> 0 order by status, level, block`),
      counted: await query(sql`select status, (l.n - 1)::int as level, (id >> l.bits)::int as block, count(*)::int as n
        from users cross join unnest(${sql.param([...USER_COUNT_LEVEL_BITS])}::int[]) with ordinality as l(bits, n)
        where workspace_id = ${workspaceId} group by 1, 2, 3 order by 1, 2, 3`),
    };
  }

  async function assertExact(workspaceId: number, message: string): Promise<void> {
    const expected = await truth(workspaceId);
    assert.deepEqual(await totals(workspaceId), { ...expected, all: expected.active + expected.deactivated }, message);
    const { stored, counted } = await blockCounts(workspaceId);
    assert.deepEqual(stored, counted, `${message}: per block`);
  }

  /** Moves the user id sequence on to the next block of ids at level 1 (so at level 0 too). */
  async function nextBlock(): Promise<void> {
    await fresh.database.db.execute(
      sql`select setval(pg_get_serial_sequence('users', 'id'), (nextval(pg_get_serial_sequence('users', 'id')) / ${2 ** USER_COUNT_LEVEL_BITS[1]} + 1) * ${2 ** USER_COUNT_LEVEL_BITS[1]})`,
    );
  }

  const add = (workspaceId: number, email: string) =>
    addUser(store, workspaceId, { email, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] }, SYSTEM_ACTOR);

  function settledCodes(results: PromiseSettledResult<unknown>[]): string[] {
    return results.map((r) => {
      if (r.status === 'fulfilled') return 'ok';
      assert.ok(r.reason instanceof AppError, String(r.reason));
      return r.reason.code;
    });
  }

  test('a new workspace counts 0; adds, deactivations and reactivations one at a time keep the counts exact', async () => {
    const ws = await newWorkspace();
    await assertExact(ws.id, 'empty');
    for (let i = 0; i < 20; i += 1) await add(ws.id, `u${i}@example.com`);
    await assertExact(ws.id, 'after 20 adds');
    for (let i = 0; i < 20; i += 3) await deactivateUser(store, ws.id, { email: `u${i}@example.com` }, SYSTEM_ACTOR);
    await assertExact(ws.id, 'after deactivations');
    await deactivateUser(store, ws.id, { email: 'u0@example.com' }, SYSTEM_ACTOR);
    await assertExact(ws.id, 'a repeated deactivation changes nothing');
    await add(ws.id, 'U3@Example.com');
    await assertExact(ws.id, 'after a reactivation');
    await assert.rejects(add(ws.id, 'u1@example.com'), (e: unknown) => e instanceof AppError && e.code === 'user_already_exists');
    await assertExact(ws.id, 'a refused add changes nothing');
  });

  test('concurrent adds of distinct and of the same emails, with removals and reactivations racing them, leave exact counts', async () => {
    const ws = await newWorkspace();
    for (let i = 0; i < 30; i += 1) {
      if (i % 8 === 0) await nextBlock();
      await add(ws.id, `base${i}@example.com`);
    }
    for (let i = 0; i < 10; i += 1) await deactivateUser(store, ws.id, { email: `base${i}@example.com` }, SYSTEM_ACTOR);
    for (let round = 0; round < 3; round += 1) {
      const operations = [
        // New users, each email twice (one wins, one is user_already_exists).
        ...Array.from({ length: 10 }, (_, i) => add(ws.id, `r${round}-${i}@example.com`)),
        ...Array.from({ length: 10 }, (_, i) => add(ws.id, `R${round}-${i}@EXAMPLE.com`)),
        // Reactivations of deactivated users, two at a time for the same email.
        ...Array.from({ length: 10 }, (_, i) => add(ws.id, `base${i}@example.com`)),
        ...Array.from({ length: 10 }, (_, i) => add(ws.id, `base${i}@example.com`)),
        // Deactivations of active users, some of them twice.
        ...Array.from({ length: 10 }, (_, i) => deactivateUser(store, ws.id, { email: `base${10 + i}@example.com` }, SYSTEM_ACTOR)),
        ...Array.from({ length: 5 }, (_, i) => deactivateUser(store, ws.id, { email: `base${10 + i}@example.com` }, SYSTEM_ACTOR)),
      ];
      const codes = settledCodes(await Promise.allSettled(operations));
      assert.ok(codes.every((c) => c === 'ok' || c === 'user_already_exists'), codes.join(', '));
      await assertExact(ws.id, `round ${round}`);
      // Put the same users back as they were for the next round.
      for (let i = 0; i < 10; i += 1) await deactivateUser(store, ws.id, { email: `base${i}@example.com` }, SYSTEM_ACTOR);
      for (let i = 10; i < 20; i += 1) await add(ws.id, `base${i}@example.com`);
      await assertExact(ws.id, `round ${round}, reset`);
    }
  });

  test('counts are per workspace, and go with a deleted workspace', async () => {
    const a = await newWorkspace();
    const b = await newWorkspace();
    await Promise.all([add(a.id, 'same@example.com'), add(b.id, 'same@example.com'), add(b.id, 'other@example.com')]);
    await assertExact(a.id, 'workspace a');
    await assertExact(b.id, 'workspace b');
    await deleteWorkspace(store, b.subdomain, SYSTEM_ACTOR);
    const left = (await fresh.database.db.execute(
      sql`select count(*)::int as n from user_counts where workspace_id = ${b.id}`,
    )) as unknown as { rows: Array<{ n: number }> };
    assert.equal(Number(left.rows[0]!.n), 0);
    await assertExact(a.id, 'workspace a after b was deleted');
  });
});
