import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import type { StatusFilter } from '../../src/core/users/user.ts';
import { searchCondition, USER_SORTS, type UserCondition, type UserQuery } from '../../src/core/users/user-query.ts';
import { addUser, deactivateUser } from '../../src/core/users/users-service.ts';
import { indexRanges } from '../../src/storage/user-conditions.ts';
import { BACKEND, createTestContext, type TestContext } from '../helpers/test-context.ts';

/*
 * A filter with a case-insensitive prefix or equality on the email, the first or the last name
 * (the `q` search, SCIM's `userName sw`, …) is read as a union of prefix-index ranges, then
 * narrowed by the whole filter (storage/users.queries.ts, docs/performance.md "Fast on data as
 * it arrives"). It must find exactly what the plain filter finds: same total, same rows in the
 * same order for every sort and window. The plain filter is the same condition under a double
 * `not`, which no range is read for.
 */
describe(`a search through index ranges finds what the plain filter finds [${BACKEND}]`, () => {
  let ctx: TestContext;
  let workspaceId: number;
  let otherId: number;

  before(async () => {
    ctx = await createTestContext();
    workspaceId = (await ctx.store.workspaces.findBySubdomain((await ctx.createWorkspace('ranges')).subdomain))!.id;
    otherId = (await ctx.store.workspaces.findBySubdomain((await ctx.createWorkspace('ranges-other')).subdomain))!.id;
    const people: Array<[string, string, string]> = [
      ['ann.lee@example.com', 'Ann', 'Lee'],
      ['anna.berg@example.com', 'Anna', 'Berg'],
      ['lee.ann@example.com', 'Lee', 'Annan'],
      ['bob@example.com', 'Bob', 'Anderson'],
      ['ANDY@example.com', 'Andy', 'Smith'],
      ['carl@example.com', 'Carl', 'Lee'],
      ['a_b%c@example.com', 'A_b%c', 'Under'],
      ['axbyc@example.com', 'Axbyc', 'Under'],
    ];
    for (const [i, [email, firstName, lastName]] of people.entries()) {
      await addUser(ctx.store, workspaceId, { email, firstName, lastName, role: i === 5 ? 'owner' : 'non_owner', apps: [] }, SYSTEM_ACTOR);
    }
    // Deactivated users, one of them deleted through SCIM; and a namesake in another workspace.
    await deactivateUser(ctx.store, workspaceId, { email: 'anna.berg@example.com' }, SYSTEM_ACTOR);
    await deactivateUser(ctx.store, workspaceId, { email: 'bob@example.com' }, SYSTEM_ACTOR, { scimDelete: true });
    await addUser(ctx.store, otherId, { email: 'ann.other@example.com', firstName: 'Ann', role: 'non_owner', apps: [] }, SYSTEM_ACTOR);
  });
  after(() => ctx?.close());

  const conditions: Array<[string, UserCondition]> = [
    ['q=ann', searchCondition({ q: 'ann' })!],
    ['q=AN (letter case)', searchCondition({ q: 'AN' })!],
    ['q=lee with role=non_owner', searchCondition({ q: 'lee', role: 'non_owner' })!],
    ['q=a_b% (LIKE wildcards are literal)', searchCondition({ q: 'a_b%' })!],
    ['q=zz (no match)', searchCondition({ q: 'zz' })!],
    ['userName eq, another letter case', { op: 'eq', field: 'email', value: 'Ann.Lee@Example.com' }],
    [
      'a range as the second condition of an and, nested ors',
      {
        op: 'and',
        conditions: [
          { op: 'ne', field: 'lastName', value: 'Smith' },
          { op: 'or', conditions: [{ op: 'sw', field: 'firstName', value: 'an' }, { op: 'or', conditions: [{ op: 'eq', field: 'lastName', value: 'LEE' }] }] },
        ],
      },
    ],
  ];

  for (const [name, where] of conditions) {
    test(`${name}: same total and rows, every status, sort and window`, async () => {
      assert.ok(indexRanges(where), 'read through index ranges');
      const plain: UserCondition = { op: 'not', condition: { op: 'not', condition: where } };
      assert.equal(indexRanges(plain), undefined, 'the reference is not');
      for (const status of ['active', 'deactivated', 'all'] as StatusFilter[]) {
        for (const sort of USER_SORTS) {
          for (const excludeScimDeleted of [false, true]) {
            for (const window of [{ offset: 0, limit: 100 }, { offset: 1, limit: 2 }, { offset: 50, limit: 10 }]) {
              const query = (w: UserCondition): UserQuery => ({ status, sort, excludeScimDeleted, where: w });
              const found = await ctx.store.users.findMatching(workspaceId, query(where), window);
              const expected = await ctx.store.users.findMatching(workspaceId, query(plain), window);
              const shown = JSON.stringify({ status, sort, excludeScimDeleted, window });
              assert.equal(found.total, expected.total, shown);
              assert.deepEqual(found.rows, expected.rows, shown);
            }
          }
        }
      }
    });
  }

  test('what the search finds: prefixes of the email or either name, any letter case, in this workspace only', async () => {
    const emails = async (where: UserCondition, status: StatusFilter = 'all') =>
      (await ctx.store.users.findMatching(workspaceId, { status, sort: 'email', where }, { offset: 0, limit: 100 })).rows.map((u) => u.email);
    assert.deepEqual(await emails(searchCondition({ q: 'ann' })!), ['ann.lee@example.com', 'anna.berg@example.com', 'lee.ann@example.com']);
    assert.deepEqual(await emails(searchCondition({ q: 'AN' })!, 'active'), ['ANDY@example.com', 'ann.lee@example.com', 'lee.ann@example.com']);
    assert.deepEqual(await emails(searchCondition({ q: 'a_b%' })!), ['a_b%c@example.com']);
    const { rows, total } = await ctx.store.users.findMatching(workspaceId, { status: 'all', where: searchCondition({ q: 'an' })! }, { offset: 1, limit: 2 });
    assert.equal(total, 5);
    assert.deepEqual(rows.map((u) => u.email), ['anna.berg@example.com', 'lee.ann@example.com']);
    assert.ok(rows.every((u) => Array.isArray(u.apps)));
  });
});
