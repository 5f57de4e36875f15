import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import { DEMO_PRODUCTS } from '../../src/core/demo.ts';
import { AppError } from '../../src/core/errors.ts';
import type { Store } from '../../src/core/ports.ts';
import { putProduct } from '../../src/core/products/products-service.ts';
import type { AppRole, User, WorkspaceRole } from '../../src/core/users/user.ts';
import { addUser, deactivateUser, findUsers, getUser, updateUser, updateUsers } from '../../src/core/users/users-service.ts';
import { createWorkspace } from '../../src/core/workspaces/workspaces-service.ts';
import { rowsOf } from '../../src/storage/rows.ts';
import { openFreshStore, type FreshStore } from '../helpers/fresh-database.ts';
import { BACKEND } from '../helpers/test-context.ts';

/*
 * The core's change paths beyond the HTTP API: a change computed from the user as it is under
 * its lock (SCIM PATCH), changes across the holders of a role (SCIM groups), and lookups by id.
 */

const HOLDS_CRM_ADMIN = { op: 'eq', field: 'app', value: 'crm:admin', caseExact: true } as const;

describe(`core: change functions, bulk changes, ids [${BACKEND}]`, () => {
  let fresh: FreshStore;
  let store: Store;
  let counter = 0;

  before(async () => {
    fresh = await openFreshStore();
    store = fresh.store;
    for (const product of DEMO_PRODUCTS) await putProduct(store, product.name, product.roles, SYSTEM_ACTOR);
  });
  after(() => fresh.close());

  async function workspace(): Promise<number> {
    counter += 1;
    return (await createWorkspace(store, `bulk-${counter}`, undefined, SYSTEM_ACTOR)).workspace.id;
  }

  async function add(ws: number, email: string, apps: AppRole[], role: WorkspaceRole = 'non_owner'): Promise<User> {
    return (await addUser(store, ws, { email, role, apps }, SYSTEM_ACTOR)).user;
  }

  test('a change function sees the user under its lock: concurrent read-modify-writes lose nothing', async () => {
    const ws = await workspace();
    await add(ws, 'rmw@example.com', []);
    const grants: AppRole[] = [
      { name: 'crm', role: 'admin' },
      { name: 'crm', role: 'member' },
      { name: 'analytics', role: 'viewer' },
      { name: 'helpdesk', role: 'agent' },
      { name: 'helpdesk', role: 'supervisor' },
    ];
    await Promise.all(
      grants.map((grant) =>
        updateUser(store, ws, { email: 'rmw@example.com' }, (current) => ({ apps: [...current.apps, grant] }), SYSTEM_ACTOR),
      ),
    );
    const user = await getUser(store, ws, { email: 'rmw@example.com' });
    assert.equal(user.apps.length, grants.length, 'every grant is there');
    assert.equal(user.version, 1 + grants.length);
  });

  test('changes of names and status, read without a lock and raced: none lost, one version and one event each', async () => {
    const ws = await workspace();
    const before = await add(ws, 'cas@example.com', [{ name: 'crm', role: 'member' }]);
    const marks = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    await Promise.all([
      ...marks.map((mark) =>
        updateUser(store, ws, { email: 'cas@example.com' }, (current) => ({ lastName: current.lastName + mark }), SYSTEM_ACTOR),
      ),
      deactivateUser(store, ws, { email: 'cas@example.com' }, SYSTEM_ACTOR),
    ]);
    const user = await getUser(store, ws, { email: 'cas@example.com' });
    assert.deepEqual([...user.lastName.slice(1)].sort(), marks, 'every mark was appended once, after the ones before it');
    assert.equal(user.status, 'deactivated');
    assert.deepEqual(user.apps, before.apps);
    assert.equal(user.version, before.version + marks.length + 1);
    const events = rowsOf<{ type: string; last_name: string }>(
      await fresh.database.db.execute(sql`select type, data->'user'->>'last_name' as last_name from events
        where workspace_id = ${ws} and type <> 'user.created' order by sequence`),
    );
    assert.equal(events.length, marks.length + 1, 'one event per change');
    assert.equal(events.filter((e) => e.type === 'user.deactivated').length, 1);
    assert.deepEqual(
      events.map((e) => e.last_name.length),
      events.map((_, i) => 2 + events.slice(0, i + 1).filter((e) => e.type === 'user.updated').length - 1),
      'each event shows the names as its own change left them, in sequence order',
    );
  });

  test('what a change function throws undoes the change', async () => {
    const ws = await workspace();
    const before = await add(ws, 'throws@example.com', []);
    await assert.rejects(
      updateUser(store, ws, { id: before.id }, () => {
        throw new AppError('validation_failed', 'refused by the caller');
      }, SYSTEM_ACTOR),
      (error: unknown) => error instanceof AppError && error.code === 'validation_failed',
    );
    assert.deepEqual(await getUser(store, ws, { id: before.id }), before);
  });

  test('users are found by id; an unknown or malformed id is user_not_found', async () => {
    const ws = await workspace();
    const user = await add(ws, 'byid@example.com', []);
    assert.equal((await getUser(store, ws, { id: user.id })).email, 'byid@example.com');
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '00919288221112222']) {
      await assert.rejects(getUser(store, ws, { id }), (e: unknown) => e instanceof AppError && e.code === 'user_not_found');
    }
    const other = await workspace();
    await assert.rejects(getUser(store, other, { id: user.id }), (e: unknown) => e instanceof AppError && e.code === 'user_not_found');
  });

  test('updateUsers revokes a role from every holder, each change audited with its event; others untouched', async () => {
    const ws = await workspace();
    await add(ws, 'a@example.com', [{ name: 'crm', role: 'admin' }, { name: 'analytics', role: 'viewer' }]);
    await add(ws, 'b@example.com', [{ name: 'crm', role: 'admin' }]);
    await add(ws, 'c@example.com', [{ name: 'crm', role: 'member' }]);
    const changed = await updateUsers(
      store,
      ws,
      HOLDS_CRM_ADMIN,
      (user) => ({ apps: user.apps.filter((a) => !(a.name === 'crm' && a.role === 'admin')) }),
      SYSTEM_ACTOR,
    );
    assert.deepEqual(changed.map((u) => u.email), ['a@example.com', 'b@example.com']);
    assert.deepEqual((await getUser(store, ws, { email: 'a@example.com' })).apps, [{ name: 'analytics', role: 'viewer' }]);
    assert.deepEqual((await getUser(store, ws, { email: 'b@example.com' })).apps, []);
    assert.equal((await getUser(store, ws, { email: 'c@example.com' })).version, 1);
    const holders = await findUsers(store, ws, { status: 'all', where: HOLDS_CRM_ADMIN }, { offset: 0, limit: 10 });
    assert.equal(holders.total, 0);
    const trail = await store.audit.findPage(ws, { pageNumber: 1, pageSize: 100 }, { action: 'user.updated' });
    assert.equal(trail.total, 2);
  });

  test('updateUsers is all or nothing: one refused change (last owner) undoes the others', async () => {
    const ws = await workspace();
    await add(ws, 'owner@example.com', [{ name: 'crm', role: 'admin' }], 'owner');
    await add(ws, 'member@example.com', [{ name: 'crm', role: 'admin' }]);
    await assert.rejects(
      updateUsers(store, ws, HOLDS_CRM_ADMIN, () => ({ status: 'deactivated' }), SYSTEM_ACTOR),
      (e: unknown) => e instanceof AppError && e.code === 'last_owner',
    );
    assert.equal((await getUser(store, ws, { email: 'member@example.com' })).status, 'active', 'the change before the refusal was undone');
  });

  test('two bulk changes of overlapping users at once both complete (locks in creation order: no deadlock)', async () => {
    const ws = await workspace();
    for (let i = 0; i < 8; i += 1) await add(ws, `o${i}@example.com`, [{ name: 'crm', role: 'admin' }]);
    const grant = (role: AppRole) => (user: User) => ({ apps: [...user.apps, role] });
    await Promise.all([
      updateUsers(store, ws, HOLDS_CRM_ADMIN, grant({ name: 'analytics', role: 'viewer' }), SYSTEM_ACTOR),
      updateUsers(store, ws, HOLDS_CRM_ADMIN, grant({ name: 'helpdesk', role: 'agent' }), SYSTEM_ACTOR),
      updateUser(store, ws, { email: 'o5@example.com' }, grant({ name: 'crm', role: 'member' }), SYSTEM_ACTOR),
    ]);
    const user = await getUser(store, ws, { email: 'o5@example.com' });
    assert.equal(user.apps.length, 4);
  });
});
