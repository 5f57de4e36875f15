import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import { DEMO_PRODUCTS } from '../../src/core/demo.ts';
import { AppError } from '../../src/core/errors.ts';
import type { Store } from '../../src/core/ports.ts';
import { deleteProduct, putProduct } from '../../src/core/products/products-service.ts';
import type { AppRole, User, WorkspaceRole } from '../../src/core/users/user.ts';
import { addUser, deactivateUser, getUser, listUsers } from '../../src/core/users/users-service.ts';
import { createWorkspace } from '../../src/core/workspaces/workspaces-service.ts';
import { openFreshStore, type FreshStore } from '../helpers/fresh-database.ts';
import { BACKEND } from '../helpers/test-context.ts';

/*
 * The races docs/contract.md Part B names ("also when two such requests race", one user per email)
 * and docs/architecture.md's "a user never exists without its apps", driven through the core functions
 * with Promise.all over one store: on PostgreSQL the calls run on separate pooled
 * connections; on PGlite they interleave on its single connection.
 */

const ALL = { pageNumber: 1, pageSize: 100 } as const;

let workspaceCounter = 0;

function errorCode(result: PromiseSettledResult<unknown>): string {
  if (result.status === 'fulfilled') return 'ok';
  const reason: unknown = result.reason;
  assert.ok(reason instanceof AppError, `expected an AppError, got ${String(reason)}`);
  return reason.code;
}

function add(store: Store, workspaceId: number, email: string, apps: AppRole[], role: WorkspaceRole = 'non_owner') {
  return addUser(store, workspaceId, { email, role, apps }, SYSTEM_ACTOR);
}

describe(`users under concurrency [${BACKEND}]`, () => {
  let fresh: FreshStore;
  let store: Store;

  before(async () => {
    fresh = await openFreshStore();
    store = fresh.store;
    for (const product of DEMO_PRODUCTS) await putProduct(store, product.name, product.roles, SYSTEM_ACTOR);
  });
  after(() => fresh.close());

  async function newWorkspace(): Promise<number> {
    workspaceCounter += 1;
    const created = await createWorkspace(store, `race-${workspaceCounter}`, undefined, SYSTEM_ACTOR);
    return created.workspace.id;
  }

  async function activeOwners(workspaceId: number): Promise<string[]> {
    const page = await listUsers(store, workspaceId, { status: 'active' }, ALL);
    return page.items.filter((u) => u.role === 'owner').map((u) => u.email);
  }

  test('deactivating the last two owners at once: one succeeds, one is last_owner (10 rounds)', async () => {
    for (let round = 0; round < 10; round += 1) {
      const ws = await newWorkspace();
      await add(store, ws, 'a@example.com', [], 'owner');
      await add(store, ws, 'b@example.com', [], 'owner');
      await add(store, ws, 'member@example.com', []);
      const results = await Promise.allSettled([
        deactivateUser(store, ws, { email: 'a@example.com' }, SYSTEM_ACTOR),
        deactivateUser(store, ws, { email: 'B@example.com' }, SYSTEM_ACTOR),
      ]);
      assert.deepEqual(results.map(errorCode).sort(), ['last_owner', 'ok'], `round ${round}`);
      const survivors = await activeOwners(ws);
      assert.equal(survivors.length, 1, `round ${round}: exactly one active owner`);
      const loser = results[0].status === 'fulfilled' ? 'b@example.com' : 'a@example.com';
      assert.deepEqual(survivors, [loser], `round ${round}: the refused one is the one still active`);
    }
  });

  test('20 concurrent adds of one email (any case): exactly one succeeds, the others are user_already_exists', async () => {
    const ws = await newWorkspace();
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        add(store, ws, i % 2 === 0 ? 'same@example.com' : 'Same@Example.COM', [{ name: 'crm', role: i % 3 === 0 ? 'admin' : 'member' }]),
      ),
    );
    const codes = results.map(errorCode);
    assert.equal(codes.filter((c) => c === 'ok').length, 1, codes.join(', '));
    assert.equal(codes.filter((c) => c === 'user_already_exists').length, 19, codes.join(', '));

    const winner = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ user: User }>).value.user;
    const page = await listUsers(store, ws, { status: 'all' }, ALL);
    assert.equal(page.pagination.totalRecords, 1);
    assert.deepEqual(page.items[0], winner, 'the stored user is the one the winning add returned, with its apps');
  });

  test('add, deactivate and re-add of one email interleaved: the end state is consistent and never loses its apps', async () => {
    const appSets: AppRole[][] = [
      [{ name: 'crm', role: 'admin' }],
      [{ name: 'helpdesk', role: 'agent' }, { name: 'crm', role: 'member' }],
      [{ name: 'analytics', role: 'viewer' }],
    ];
    const ws = await newWorkspace();
    await add(store, ws, 'boss@example.com', [], 'owner');
    for (let round = 0; round < 10; round += 1) {
      const email = `flip-${round}@example.com`;
      const initial = await add(store, ws, email, appSets[0]!);
      // Half the rounds start from a deactivated user, so both adds may succeed in turn.
      if (round % 2 === 1) await deactivateUser(store, ws, { email: email }, SYSTEM_ACTOR);
      const [addB, removal, addC] = await Promise.allSettled([
        add(store, ws, email.toUpperCase(), appSets[1]!),
        deactivateUser(store, ws, { email: email }, SYSTEM_ACTOR),
        add(store, ws, email, appSets[2]!),
      ]);
      assert.equal(errorCode(removal), 'ok', `round ${round}: deactivating a non-owner never fails`);
      const adds = [addB, addC];
      for (const r of adds) assert.ok(['ok', 'user_already_exists'].includes(errorCode(r)), `round ${round}`);
      const won = adds.flatMap((r) => (r.status === 'fulfilled' ? [r.value.user] : []));
      if (round % 2 === 0) assert.ok(won.length <= 1, `round ${round}: an active user is added at most once`);

      const final = await getUser(store, ws, { email });
      const listed = (await listUsers(store, ws, { status: 'all' }, ALL)).items.filter((u) => u.email.toLowerCase() === email);
      assert.equal(listed.length, 1, `round ${round}: one user per email`);
      assert.deepEqual(listed[0], final);
      assert.equal(final.email, email, 'the stored email is the first one given');
      if (final.status === 'active') {
        assert.ok(won.length >= 1, `round ${round}: active at the end means an add won after the deactivation`);
        assert.ok(
          won.some((w) => JSON.stringify(w) === JSON.stringify(final)),
          `round ${round}: the active user is exactly what a winning add returned: ${JSON.stringify(final)}`,
        );
      } else {
        assert.equal(final.status, 'deactivated');
        const possible = [initial.user.apps, ...won.map((w) => w.apps)].map((a) => JSON.stringify(a));
        assert.ok(possible.includes(JSON.stringify(final.apps)), `round ${round}: a deactivated user keeps the apps it held`);
      }
      assert.ok(final.apps.length > 0, `round ${round}: apps never go missing`);
    }
  });

  test('a failing add stores nothing: unknown product or role leaves no user row', async () => {
    const ws = await newWorkspace();
    const attempts: Array<[AppRole[], string]> = [
      [[{ name: 'crm', role: 'admin' }, { name: 'nope', role: 'x' }], 'unknown_product'],
      [[{ name: 'crm', role: 'admin' }, { name: 'crm', role: 'janitor' }], 'unknown_product_role'],
    ];
    for (const [apps, code] of attempts) {
      await assert.rejects(add(store, ws, 'ghost@example.com', apps), (error: unknown) => error instanceof AppError && error.code === code);
      assert.equal(await store.users.find(ws, { email: 'ghost@example.com' }), undefined, code);
    }
    assert.equal((await listUsers(store, ws, { status: 'all' }, ALL)).pagination.totalRecords, 0);
  });

  test('a failing re-add of a deactivated user leaves it deactivated with its apps', async () => {
    const ws = await newWorkspace();
    const apps = [{ name: 'helpdesk', role: 'supervisor' }];
    await add(store, ws, 'back@example.com', apps);
    await deactivateUser(store, ws, { email: 'back@example.com' }, SYSTEM_ACTOR);
    const before = await store.users.find(ws, { email: 'back@example.com' });
    await assert.rejects(
      add(store, ws, 'back@example.com', [{ name: 'crm', role: 'member' }, { name: 'nope', role: 'x' }]),
      (error: unknown) => error instanceof AppError && error.code === 'unknown_product',
    );
    const afterwards = await store.users.find(ws, { email: 'back@example.com' });
    assert.deepEqual(afterwards, before);
    assert.deepEqual(afterwards?.apps, apps);
  });

  test('add racing the removal of its product: either the user exists with its apps or neither change left a trace', async () => {
    const ws = await newWorkspace();
    for (let round = 0; round < 10; round += 1) {
      const product = `temp-${round}`;
      const email = `racer-${round}@example.com`;
      await putProduct(store, product, ['user'], SYSTEM_ACTOR);
      const [added, removed] = await Promise.allSettled([
        add(store, ws, email, [{ name: 'crm', role: 'member' }, { name: product, role: 'user' }]),
        deleteProduct(store, product, SYSTEM_ACTOR),
      ]);
      const outcome = [errorCode(added), errorCode(removed)];
      const stored = await store.users.find(ws, { email: email });
      const catalogue = (await store.products.findAll()).map((p) => p.name);
      if (outcome[0] === 'ok') {
        assert.deepEqual(outcome, ['ok', 'product_in_use'], `round ${round}`);
        assert.deepEqual(stored?.apps, [{ name: 'crm', role: 'member' }, { name: product, role: 'user' }]);
        assert.ok(catalogue.includes(product));
      } else {
        assert.deepEqual(outcome, ['unknown_product', 'ok'], `round ${round}`);
        assert.equal(stored, undefined, `round ${round}: no user row without its apps`);
        assert.ok(!catalogue.includes(product));
      }
    }
  });
});
