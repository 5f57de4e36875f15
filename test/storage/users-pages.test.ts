import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import type { Store } from '../../src/core/ports.ts';
import type { StatusFilter, User } from '../../src/core/users/user.ts';
import { addUser, deactivateUser, listUsers } from '../../src/core/users/users-service.ts';
import { createWorkspace } from '../../src/core/workspaces/workspaces-service.ts';
import { USER_COUNT_BLOCK_IDS } from '../../src/storage/schema.ts';
import { openFreshStoreWithProducts, type FreshStore } from '../helpers/fresh-database.ts';
import { BACKEND } from '../helpers/test-context.ts';

/*
 * A page is found through the per-block user counts (issue 5: deep pages without long
 * OFFSET scans). The users here are spread over several blocks of ids (the id sequence is
 * moved on between them), some blocks holding no active user at all, so that pages start in,
 * and cross, every kind of block. Every way of paging must give the same rows, in creation
 * order, as one straight read of the whole table, with the same totals.
 */

const USERS = 47;
/** Users 20–24 are the only ones of their block: deactivating them all empties it for `active`. */
const DEACTIVATED = new Set([0, 1, 5, 17, 20, 21, 22, 23, 24, 40, 46]);
/** Before these users, the id sequence jumps to the next block (or, for 33, within the block). */
const JUMPS = new Map([
  [10, USER_COUNT_BLOCK_IDS],
  [20, USER_COUNT_BLOCK_IDS],
  [25, USER_COUNT_BLOCK_IDS * 2],
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
        await fresh.database.db.execute(
          sql`select setval(pg_get_serial_sequence('users', 'id'), (nextval(pg_get_serial_sequence('users', 'id')) / ${jump} + 1) * ${jump})`,
        );
      }
      const apps = i % 3 === 0 ? [] : [{ name: 'crm', role: 'member' }, { name: 'analytics', role: i % 2 ? 'viewer' : 'editor' }];
      await addUser(store, workspaceId, { email: `p${i}@example.com`, role: 'non_owner', apps, firstName: `F${i}` }, SYSTEM_ACTOR);
      // Interleaved users of another workspace must never show, nor shift the pages.
      if (i % 4 === 0) await addUser(store, otherWorkspaceId, { email: `n${i}@example.com`, role: 'non_owner', apps: [] }, SYSTEM_ACTOR);
    }
    for (const i of DEACTIVATED) await deactivateUser(store, workspaceId, { email: `p${i}@example.com` }, SYSTEM_ACTOR);
  });
  after(() => fresh.close());

  test('the users really are spread over four blocks of ids', async () => {
    const result = (await fresh.database.db.execute(
      sql`select count(distinct id / ${USER_COUNT_BLOCK_IDS})::int as blocks from users where workspace_id = ${workspaceId}`,
    )) as unknown as { rows: Array<{ blocks: number }> };
    assert.equal(Number(result.rows[0]!.blocks), 4);
  });

  /** Emails of the workspace's users with `status`, by id, read in one plain query. */
  async function expectedEmails(status: StatusFilter): Promise<string[]> {
    const filter = status === 'all' ? sql`` : sql` and status = ${status}`;
    const result = (await fresh.database.db.execute(
      sql`select email from users where workspace_id = ${workspaceId}${filter} order by id`,
    )) as unknown as { rows: Array<{ email: string }> };
    return result.rows.map((r) => r.email);
  }

  for (const status of ['active', 'deactivated', 'all'] as const) {
    test(`status=${status}: every page size gives the same rows as one straight read, with exact totals`, async () => {
      const expected = await expectedEmails(status);
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
