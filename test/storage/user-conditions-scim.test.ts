import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import type { UserCondition } from '../../src/core/users/user-query.ts';
import { addUser, findUsers } from '../../src/core/users/users-service.ts';
import { BACKEND, createTestContext, type TestContext } from '../helpers/test-context.ts';

/*
 * The UserCondition forms SCIM needs, compiled to SQL on both backends: `in` (ids), `any`
 * (one element of a SCIM attribute array satisfies every test), and paths under an
 * extension's URN.
 */
describe(`user conditions for SCIM [${BACKEND}]`, () => {
  let ctx: TestContext;
  let workspaceId: number;
  const ids: Record<string, string> = {};
  const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

  const emails = async (where: UserCondition) =>
    (await findUsers(ctx.store, workspaceId, { status: 'all', where }, { offset: 0, limit: 100 })).rows.map((u) => u.email).sort();

  before(async () => {
    ctx = await createTestContext();
    const ws = await ctx.createWorkspace('conditions');
    workspaceId = (await ctx.store.workspaces.findBySubdomain(ws.subdomain))!.id;
    const add = async (email: string, scimAttributes: Record<string, unknown>) => {
      const { user } = await addUser(ctx.store, workspaceId, { email, role: 'non_owner', apps: [], scimAttributes }, SYSTEM_ACTOR);
      ids[email] = user.id;
    };
    await add('a@example.com', { addresses: [{ type: 'work', country: 'DE' }, { type: 'home', country: 'FR' }], [ENTERPRISE]: { department: 'R&D' } });
    await add('b@example.com', { addresses: [{ type: 'work', country: 'FR' }], [ENTERPRISE]: { department: 'Sales' } });
    await add('c@example.com', { addresses: { type: 'work', country: 'DE' } });
  });
  after(() => ctx.close());

  test('in: the users whose id is listed; texts that are no UUID match nothing', async () => {
    assert.deepEqual(await emails({ op: 'in', field: 'id', values: [ids['a@example.com']!.toUpperCase(), ids['c@example.com']!, 'not-a-uuid'] }), ['a@example.com', 'c@example.com']);
    assert.deepEqual(await emails({ op: 'in', field: 'id', values: ['nope'] }), []);
    assert.deepEqual(await emails({ op: 'not', condition: { op: 'in', field: 'id', values: [ids['a@example.com']!] } }), ['b@example.com', 'c@example.com']);
  });

  test('any: both tests must hold for one and the same element (a lone object counts as one)', async () => {
    const workIn = (country: string): UserCondition => ({
      op: 'any',
      path: ['addresses'],
      condition: {
        op: 'and',
        conditions: [
          { op: 'eq', field: { scimAttribute: ['type'] }, value: 'WORK' },
          { op: 'eq', field: { scimAttribute: ['country'] }, value: country },
        ],
      },
    });
    assert.deepEqual(await emails(workIn('DE')), ['a@example.com', 'c@example.com']);
    assert.deepEqual(await emails(workIn('FR')), ['b@example.com'], "a's French address is its home");
    assert.deepEqual(await emails({ op: 'any', path: ['bad"name'], condition: { op: 'true' } }), [], 'a name that is no SCIM name matches nothing');
  });

  test('paths under an extension URN', async () => {
    assert.deepEqual(await emails({ op: 'sw', field: { scimAttribute: [ENTERPRISE, 'department'] }, value: 'r&' }), ['a@example.com']);
    assert.deepEqual(await emails({ op: 'pr', field: { scimAttribute: [ENTERPRISE] } }), ['a@example.com', 'b@example.com']);
  });
});
