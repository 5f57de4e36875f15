import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import type { Store } from '../../src/core/ports.ts';
import type { StatusFilter, User } from '../../src/core/users/user.ts';
import { addUser, deactivateUser, listUsers } from '../../src/core/users/users-service.ts';
import { createWorkspace } from '../../src/core/workspaces/workspaces-service.ts';
import { USER_COUNT_LEVEL_BITS } from '../../src/storage/schema.ts';
import { openFreshStoreWithProducts, type FreshStore } from '../helpers/fresh-database.ts';
import { BACKEND } from '../helpers/test-context.ts';

/*
 * A page is found through the levels of user counts (docs/performance.md: deep pages without long
 * OFFSET scans). The users here are spread over several blocks of ids at every level (the id
 * sequence is moved on between them), some blocks holding no active user at all, so that
 * pages start in, and cross, every kind of block. Every way of paging must give the same rows,
 * in creation order, as one straight read of the whole table, with the same totals.
 */

/** Ids in a block of `level` of the counts. */
const blockIds = (level: number) => 2 ** USER_COUNT_LEVEL_BITS[level]!;

/** Moves the user id sequence on to the next multiple of `ids` (plus `extra`). */
const jumpSql = (ids: number, extra = 0) =>
  sql`select setval(pg_get_serial_sequence('users', 'id'), (nextval(pg_get_serial_sequence('users', 'id')) / ${ids} + 1) * ${ids} + ${extra})`;

/** Emails of the users of `workspaceId` with `status`, by id, read in one plain query. */
async function straightRead(fresh: FreshStore, workspaceId: number, status: StatusFilter): Promise<string[]> {
  const filter = status === 'all' ? sql`` : sql` and status = ${status}`;
  const result = (await fresh.database.db.execute(
    sql`select email from users where workspace_id = ${workspaceId}${filter} order by id`,
  )) as unknown as { rows: Array<{ email: string }> };
  return result.rows.map((r) => r.email);
}

const USERS = 47;
/** Users 20–24 are the only ones of their block: deactivating them all empties it for `active`. */
const DEACTIVATED = new Set([0, 1, 5, 17, 20, 21, 22, 23, 24, 40, 46]);
/** Before these users, the id sequence jumps to the next block (or, for 33, within the block). */
const JUMPS = new Map([
  [10, blockIds(0)],
  [20, blockIds(1)],
  [25, blockIds(0) * 2],
  [33, 7],
]);

describe(`pages of a listing [${BACKEND}]`, () => {
  let fresh: FreshStore;
  let store: Store;
  let workspaceId: number;
  let otherWorkspaceId: number;

  before(async () => {
    fresh = await openFreshStoreWithProducts();
    store = fresh.store;
    workspaceId = (await createWorkspace(store, 'pages', undefined, SYSTEM_ACTOR)).workspace.id;
    otherWorkspaceId = (await createWorkspace(store, 'neighbour', undefined, SYSTEM_ACTOR)).workspace.id;
    for (let i = 0; i < USERS; i += 1) {
      const jump = JUMPS.get(i);
      if (jump !== undefined) {
        await fresh.database.db.execute(jumpSql(jump));
      }
      const apps = i % 3 === 0 ? [] : [{ name: 'crm', role: 'member' }, { name: 'analytics', role: i % 2 ? 'viewer' : 'editor' }];
      await addUser(store, workspaceId, { email: `p${i}@example.com`, role: 'non_owner', apps, firstName: `F${i}` }, SYSTEM_ACTOR);
      // Interleaved users of another workspace must never show, nor shift the pages.
      if (i % 4 === 0) await addUser(store, otherWorkspaceId, { email: `n${i}@example.com`, role: 'non_owner', apps: [] }, SYSTEM_ACTOR);
    }
    for (const i of DEACTIVATED) await deactivateUser(store, workspaceId, { email: `p${i}@example.com` }, SYSTEM_ACTOR);
  });
  after(() => fresh.close());

  test('the users really are spread over four blocks of the lowest level', async () => {
    const result = (await fresh.database.db.execute(
      sql`select count(distinct id / ${blockIds(0)})::int as blocks from users where workspace_id = ${workspaceId}`,
    )) as unknown as { rows: Array<{ blocks: number }> };
    assert.equal(Number(result.rows[0]!.blocks), 4);
  });

  for (const status of ['active', 'deactivated', 'all'] as const) {
    test(`status=${status}: every page size gives the same rows as one straight read, with exact totals`, async () => {
      const expected = await straightRead(fresh, workspaceId, status);
      const full = (await listUsers(store, workspaceId, { status: status }, { pageNumber: 1, pageSize: 100 })).items;
      assert.deepEqual(full.map((u) => u.email), expected);
      const byEmail = new Map<string, User>(full.map((u) => [u.email, u]));
      for (const pageSize of [1, 2, 3, 5, 7, 10, 16, 30]) {
        const pages = Math.ceil(expected.length / pageSize);
        const seen: string[] = [];
        for (let pageNumber = 1; pageNumber <= pages + 1; pageNumber += 1) {
          const page = await listUsers(store, workspaceId, { status: status }, { pageNumber, pageSize });
          assert.equal(page.pagination.totalRecords, expected.length, `size ${pageSize}, page ${pageNumber}: total`);
          assert.equal(page.pagination.totalPages, pages);
          const wanted = pageNumber <= pages ? Math.min(pageSize, expected.length - (pageNumber - 1) * pageSize) : 0;
          assert.equal(page.items.length, wanted, `size ${pageSize}, page ${pageNumber}: length`);
          for (const user of page.items) assert.deepEqual(user, byEmail.get(user.email), 'whole user, apps included');
          seen.push(...page.items.map((u) => u.email));
        }
        assert.deepEqual(seen, expected, `size ${pageSize}: pages in order, each row once`);
      }
    });
  }

  test('a page far past the end is empty with the right totals', async () => {
    const page = await listUsers(store, workspaceId, { status: 'active' }, { pageNumber: 2_147_483_647, pageSize: 100 });
    assert.deepEqual(page.items, []);
    assert.equal(page.pagination.totalRecords, USERS - DEACTIVATED.size);
  });

  test('a workspace without users: empty pages, zero totals', async () => {
    const empty = (await createWorkspace(store, 'empty-pages', undefined, SYSTEM_ACTOR)).workspace.id;
    for (const pageNumber of [1, 2]) {
      const page = await listUsers(store, empty, { status: 'all' }, { pageNumber, pageSize: 30 });
      assert.deepEqual(page.items, []);
      assert.deepEqual(page.pagination, { totalRecords: 0, currentPageNumber: pageNumber, totalPages: 0, pageSize: 30 });
    }
  });
});

/*
 * Deep pages: 6,000 users, half of them deactivated, in chunks separated by jumps of the id
 * sequence to the next block of each level, so that pages deeper than the direct walk from
 * either end go down every level of the counts. The chunks are loaded set-based and counted
 * as migration 0007 counts them; then users are added and deactivated through the service,
 * whose statements must keep every level exact.
 */
describe(`deep pages of a listing [${BACKEND}]`, () => {
  let fresh: FreshStore;
  let store: Store;
  let workspaceId: number;
  /** [users in the chunk, ids of the block the sequence jumps to the next of before it]. */
  const CHUNKS: Array<[number, number]> = [
    [1_500, 1],
    [700, blockIds(1)],
    [1_300, blockIds(2)],
    [1_500, blockIds(3)],
    [1_000, blockIds(0) * 2],
  ];

  before(async () => {
    fresh = await openFreshStoreWithProducts();
    store = fresh.store;
    workspaceId = (await createWorkspace(store, 'deep', undefined, SYSTEM_ACTOR)).workspace.id;
    const neighbour = (await createWorkspace(store, 'deep-neighbour', undefined, SYSTEM_ACTOR)).workspace.id;
    const db = fresh.database.db;
    let first = 0;
    for (const [count, jump] of CHUNKS) {
      await db.execute(jumpSql(jump));
      await db.execute(sql`insert into users (workspace_id, email, role, first_name, last_name, status)
        select ${workspaceId}::int8, 'd' || g || '@example.com', 'non_owner', 'F', 'L', case when g % 2 = 0 then 'deactivated' else 'active' end
        from generate_series(${first}::int, ${first + count - 1}::int) as g order by g`);
      first += count;
      await addUser(store, neighbour, { email: `n${first}@example.com`, role: 'non_owner', apps: [] }, SYSTEM_ACTOR);
    }
    await db.execute(sql`insert into user_counts (workspace_id, status, level, block, slot, user_count)
      select u.workspace_id, u.status, (l.n - 1)::smallint, u.id >> l.bits, (u.id % 4)::smallint, count(*)
      from users u cross join unnest(${sql.param([...USER_COUNT_LEVEL_BITS])}::int[]) with ordinality as l(bits, n)
      where u.workspace_id = ${workspaceId} group by 1, 2, 3, 4, 5`);
    for (let i = 0; i < 40; i += 1) {
      await addUser(store, workspaceId, { email: `late${i}@example.com`, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] }, SYSTEM_ACTOR);
    }
    for (let i = 1; i < 6_000; i += 97) await deactivateUser(store, workspaceId, { email: `d${i}@example.com` }, SYSTEM_ACTOR);
    for (let i = 0; i < 40; i += 9) await deactivateUser(store, workspaceId, { email: `late${i}@example.com` }, SYSTEM_ACTOR);
  });
  after(() => fresh.close());

  test('the users really are spread over several blocks at every level below the total', async () => {
    for (let level = 0; level < USER_COUNT_LEVEL_BITS.length - 1; level += 1) {
      const result = (await fresh.database.db.execute(
        sql`select count(distinct id / ${blockIds(level)})::int as blocks from users where workspace_id = ${workspaceId}`,
      )) as unknown as { rows: Array<{ blocks: number }> };
      assert.ok(Number(result.rows[0]!.blocks) >= 2, `level ${level}: ${result.rows[0]!.blocks} blocks`);
    }
  });

  for (const status of ['active', 'deactivated', 'all'] as const) {
    test(`status=${status}: every offset, found through the levels from either end, equals one straight read`, async () => {
      // No direct walk (its last argument 0): every page, even the first, goes down every level,
      // each read from the nearer end of its parent, and walks from the nearer end of its
      // lowest-level block; a page size of 1 and one of 7 (pages across blocks), both directions.
      const statusParam = status === 'all' ? null : status;
      const filter = status === 'all' ? sql`` : sql` and u.status = ${status}`;
      for (const pageSize of [1, 7]) {
        const result = (await fresh.database.db.execute(sql`with straight as (
            select array_agg(u.id order by u.id) as ids, count(*)::int8 as n from users u where u.workspace_id = ${workspaceId}${filter}
          )
          select o::int as page_offset, p.total::int8 as total, p.ids::text as ids, s.ids[o + 1:o + ${pageSize}]::text as expected
          from straight s cross join generate_series(0, s.n::int) as o
          cross join lateral (
            select max(f.total) as total, coalesce(array_agg(f.id order by f.id) filter (where f.id is not null), '{}') as ids
            from user_page_ids(${workspaceId}::int8, ${statusParam}::text, o::int8, ${pageSize}::int8, 0) f
          ) p
          where p.total <> s.n or p.ids is distinct from coalesce(s.ids[o + 1:o + ${pageSize}], '{}')`)) as unknown as {
          rows: Array<{ page_offset: number; total: string; ids: string; expected: string }>;
        };
        assert.deepEqual(result.rows.slice(0, 5), [], `size ${pageSize}: offsets whose page or total differ`);
      }
    });

    test(`status=${status}: pages at every depth, read from either end, equal one straight read`, async () => {
      const expected = await straightRead(fresh, workspaceId, status);
      assert.ok(expected.length > 2_500, `${expected.length} users`);
      for (const pageSize of [1, 7, 30, 100]) {
        const pages = Math.ceil(expected.length / pageSize);
        // Every page for the larger sizes; for the smaller ones a spread of depths and the ends.
        const numbers =
          pageSize >= 30
            ? Array.from({ length: pages + 1 }, (_, i) => i + 1)
            : [...new Set([1, 2, pages - 1, pages, pages + 1, ...Array.from({ length: 60 }, (_, i) => Math.max(1, Math.round((i * pages) / 60)))])];
        for (const pageNumber of numbers) {
          const page = await listUsers(store, workspaceId, { status }, { pageNumber, pageSize });
          const from = (pageNumber - 1) * pageSize;
          assert.equal(page.pagination.totalRecords, expected.length, `size ${pageSize}, page ${pageNumber}: total`);
          assert.deepEqual(
            page.items.map((u) => u.email),
            expected.slice(from, from + pageSize),
            `size ${pageSize}, page ${pageNumber}`,
          );
        }
      }
    });
  }
});
