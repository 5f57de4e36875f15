import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { BACKEND, createTestContext, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type ScimError, type ScimGroup, type ScimList } from '../helpers/json.ts';

/*
 * SCIM Groups are product roles (docs/contract.md Part B, SCIM 2.0 provisioning): linking, members as
 * the role's holders, grants and revocations through the core (audited, actor scim), refused
 * renames, unlinking, filters as Entra ID's membership checks send them, errors.
 */

const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** A group as read back, with the resource metadata the tests look at (RFC 7643 §3.1). */
type Group = ScimGroup & { meta: { resourceType: string } };

describe(`SCIM Groups [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  const ids: Record<string, string> = {};

  function scim(method: string, path: string, body?: unknown): Promise<LightMyRequestResponse> {
    return ctx.app.inject({
      method: method as 'GET',
      url: `/scim/v2${path}`,
      headers: { host: ws.host, authorization: `Bearer ${ws.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  }

  function expectError(res: LightMyRequestResponse, status: number, scimType?: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.equal(json<ScimError>(res).status, String(status));
    assert.equal(json<ScimError>(res).scimType, scimType);
  }

  /** The product roles a user holds, through the native API. */
  async function appsOf(email: string): Promise<string[]> {
    const res = await ctx.api(ws, 'GET', `/users/${email}`);
    return json<'User'>(res).apps.map((a) => `${a.name}:${a.role}`).sort();
  }

  const memberIds = (res: LightMyRequestResponse) => (json<ScimGroup>(res).members ?? []).map((m) => m.value).sort();

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('scim-groups');
    for (const name of ['ann', 'bob', 'cid', 'dee']) {
      const res = await scim('POST', '/Users', { userName: `${name}@example.com`, displayName: name.toUpperCase() });
      assert.equal(res.statusCode, 201, res.body);
      ids[name] = json<{ id: string }>(res).id;
    }
  });
  after(() => ctx.close());

  test('POST links a catalogue role as a group; its members are granted the role', async () => {
    const res = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'crm:admin', externalId: 'okta-g1', members: [{ value: ids.ann, display: 'ignored' }] });
    assert.equal(res.statusCode, 201, res.body);
    const group = json<Group>(res);
    assert.equal(group.displayName, 'crm:admin');
    assert.equal(group.externalId, 'okta-g1');
    assert.equal(res.headers.location, `http://${ws.host}/scim/v2/Groups/${group.id}`);
    assert.deepEqual(group.members, [{ value: ids.ann, display: 'ANN', type: 'User', $ref: `http://${ws.host}/scim/v2/Users/${ids.ann}` }]);
    assert.equal(group.meta.resourceType, 'Group');
    assert.deepEqual(await appsOf('ann@example.com'), ['crm:admin']);
    const user = json<{ roles?: Array<{ value: string }> }>(await scim('GET', `/Users/${ids.ann}`));
    assert.deepEqual(user.roles, [{ value: 'crm:admin' }]);
    const audit = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`)).audit_events;
    const linked = audit.find((e) => e.action === 'group.linked')!;
    assert.equal(linked.actor_type, 'scim');
    assert.equal(linked.target_id, 'crm:admin');
    const granted = audit.filter((e) => e.action === 'user.updated' && e.target_id === 'ann@example.com');
    assert.equal(granted.length, 1);
    assert.equal(granted[0]!.actor_type, 'scim');
    ids.admins = group.id;
  });

  test('POST refuses a linked role (409 uniqueness) and a name outside the catalogue (400), changing nothing', async () => {
    expectError(await scim('POST', '/Groups', { displayName: 'crm:admin' }), 409, 'uniqueness');
    expectError(await scim('POST', '/Groups', { displayName: 'Engineering' }), 400, 'invalidValue');
    expectError(await scim('POST', '/Groups', { displayName: 'crm:emperor' }), 400, 'invalidValue');
    expectError(await scim('POST', '/Groups', { displayName: 'nope:admin', members: [{ value: ids.bob }] }), 400, 'invalidValue');
    expectError(await scim('POST', '/Groups', { members: [] }), 400, 'invalidValue');
    expectError(await scim('POST', '/Groups', { displayName: 'crm:member', members: [{ value: 5 }] }), 400, 'invalidValue');
    assert.deepEqual(await appsOf('bob@example.com'), []);
    assert.equal(json<ScimList>(await scim('GET', '/Groups')).totalResults, 1);
  });

  test('members are the users holding the role, whoever granted it', async () => {
    assert.equal((await ctx.api(ws, 'PATCH', '/users/bob@example.com', { body: { user: { apps: [{ name: 'crm', role: 'admin' }] } } })).statusCode, 200);
    assert.deepEqual(memberIds(await scim('GET', `/Groups/${ids.admins}`)), [ids.ann, ids.bob].sort());
  });

  test('PATCH as Okta and Entra ID send it: add members, remove by filter, remove with a value list; 204', async () => {
    let res = await scim('PATCH', `/Groups/${ids.admins}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'Add', path: 'members', value: [{ value: ids.cid }, { value: ids.dee }] }],
    });
    assert.equal(res.statusCode, 204, res.body);
    assert.equal(res.body, '');
    assert.deepEqual(await appsOf('cid@example.com'), ['crm:admin']);
    res = await scim('PATCH', `/Groups/${ids.admins}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: `members[value eq "${ids.cid}"]` }] });
    assert.equal(res.statusCode, 204);
    assert.deepEqual(await appsOf('cid@example.com'), []);
    res = await scim('PATCH', `/Groups/${ids.admins}`, { schemas: [PATCH_OP], Operations: [{ op: 'Remove', path: 'members', value: [{ value: ids.dee }] }] });
    assert.equal(res.statusCode, 204);
    assert.deepEqual(await appsOf('dee@example.com'), []);
    assert.deepEqual(memberIds(await scim('GET', `/Groups/${ids.admins}`)), [ids.ann, ids.bob].sort());
  });

  test('PATCH with attributes answers 200 with the group; path-less member adds and replace of all members work', async () => {
    let res = await scim('PATCH', `/Groups/${ids.admins}?attributes=members`, { schemas: [PATCH_OP], Operations: [{ op: 'add', value: { members: [{ value: ids.cid }] } }] });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(memberIds(res), [ids.ann, ids.bob, ids.cid].sort());
    res = await scim('PATCH', `/Groups/${ids.admins}?excludedAttributes=meta`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'members', value: [{ value: ids.dee }] }] });
    assert.deepEqual(memberIds(res), [ids.dee]);
    assert.deepEqual(await appsOf('ann@example.com'), []);
    assert.deepEqual(await appsOf('dee@example.com'), ['crm:admin']);
  });

  test('unknown member ids are ignored (an IdP may still list removed users); the others are changed', async () => {
    const res = await scim('PATCH', `/Groups/${ids.admins}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: '00000000-0000-4000-8000-000000000000' }, { value: 'not-a-uuid' }, 'also-not', { value: ids.ann }] }],
    });
    assert.equal(res.statusCode, 204, res.body);
    assert.deepEqual(memberIds(await scim('GET', `/Groups/${ids.admins}`)), [ids.ann, ids.dee].sort());
  });

  test('a rename is refused (400 mutability) except to the same name; externalId changes', async () => {
    expectError(await scim('PATCH', `/Groups/${ids.admins}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { id: ids.admins, displayName: 'Admins' } }] }), 400, 'mutability');
    expectError(await scim('PUT', `/Groups/${ids.admins}`, { displayName: 'crm:member' }), 400, 'mutability');
    let res = await scim('PATCH', `/Groups/${ids.admins}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { id: ids.admins, displayName: 'crm:admin', externalId: 'okta-g2' } }] });
    assert.equal(res.statusCode, 204);
    res = await scim('GET', `/Groups/${ids.admins}?excludedAttributes=members`);
    assert.equal(json<ScimGroup>(res).externalId, 'okta-g2');
    assert.equal(json<ScimGroup>(res).members, undefined);
  });

  test('PUT replaces members when given and keeps them when not', async () => {
    let res = await scim('PUT', `/Groups/${ids.admins}`, { schemas: [GROUP], displayName: 'crm:admin', externalId: 'okta-g2' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(memberIds(res), [ids.ann, ids.dee].sort());
    res = await scim('PUT', `/Groups/${ids.admins}`, { schemas: [GROUP], displayName: 'crm:admin', members: [{ value: ids.bob }] });
    assert.deepEqual(memberIds(res), [ids.bob]);
    assert.equal(json<ScimGroup>(res).externalId, undefined, 'PUT replaces externalId');
  });

  test('bad group PATCH bodies are 400 with their scimType and change nothing', async () => {
    const before = memberIds(await scim('GET', `/Groups/${ids.admins}`));
    const cases: Array<[unknown, string]> = [
      [{ schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'nope', value: 'x' }] }, 'invalidPath'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'members[display eq "x"]' }] }, 'invalidFilter'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'add', path: `members[value eq "${ids.ann}"]`, value: 'x' }] }, 'invalidPath'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: 7 }] }] }, 'invalidValue'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'displayName' }] }, 'mutability'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'id', value: 'x' }] }, 'mutability'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'add', value: 'members' }] }, 'invalidValue'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: ids.ann }] }, { op: 'add', path: 'members[', value: [] }] }, 'invalidPath'],
    ];
    for (const [body, scimType] of cases) expectError(await scim('PATCH', `/Groups/${ids.admins}`, body), 400, scimType);
    assert.deepEqual(memberIds(await scim('GET', `/Groups/${ids.admins}`)), before);
  });

  test('filters: displayName, externalId, and the membership check Entra ID sends', async () => {
    const member = await scim('POST', '/Groups', { displayName: 'helpdesk:agent', externalId: 'aad-9', members: [{ value: ids.cid }] });
    ids.agents = json<ScimGroup>(member).id;
    const list = async (filter: string, extra = '') => {
      const res = await scim('GET', `/Groups?filter=${encodeURIComponent(filter)}${extra}`);
      assert.equal(res.statusCode, 200, res.body);
      return json<ScimList<ScimGroup>>(res);
    };
    assert.deepEqual((await list('displayName eq "HELPDESK:agent"')).Resources.map((g) => g.id), [ids.agents]);
    assert.equal((await list('externalId eq "aad-9"')).totalResults, 1);
    // The other group has no externalId: a textual comparison with it is false, not an error.
    for (const textual of ['externalId sw ""', 'externalId co "AD"', 'externalId ew "9"', 'not (externalId sw "x")']) {
      assert.equal((await list(textual)).totalResults, textual.startsWith('not') ? 2 : 1, textual);
    }
    const check = await list(`id eq "${ids.agents}" and members[value eq "${ids.cid}"]`, '&excludedAttributes=members');
    assert.equal(check.totalResults, 1);
    assert.equal(check.Resources[0]!.members, undefined);
    assert.equal((await list(`id eq "${ids.agents}" and members[value eq "${ids.ann}"]`)).totalResults, 0);
    assert.equal((await list(`members.value eq "${ids.cid}"`)).totalResults, 1);
    assert.equal((await list('meta.created gt "2000-01-01T00:00:00Z"')).totalResults, 2);
    const page = await scim('GET', '/Groups?startIndex=2&count=1');
    const paged = json<ScimList<ScimGroup>>(page);
    assert.deepEqual([paged.totalResults, paged.itemsPerPage, paged.startIndex], [2, 1, 2]);
    for (const bad of ['members co "x"', 'title eq "x"', 'displayName eq']) {
      expectError(await scim('GET', `/Groups?filter=${encodeURIComponent(bad)}`), 400, 'invalidFilter');
    }
  });

  test('a user deleted through SCIM leaves the member lists and cannot be added', async () => {
    assert.equal((await scim('DELETE', `/Users/${ids.cid}`)).statusCode, 204);
    assert.deepEqual(memberIds(await scim('GET', `/Groups/${ids.agents}`)), []);
    await scim('PATCH', `/Groups/${ids.admins}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: ids.cid }] }] });
    assert.ok(!memberIds(await scim('GET', `/Groups/${ids.admins}`)).includes(ids.cid!));
  });

  test('DELETE unlinks the group and revokes its role from every holder; it is 404 afterwards', async () => {
    assert.deepEqual(await appsOf('bob@example.com'), ['crm:admin']);
    const res = await scim('DELETE', `/Groups/${ids.admins}`);
    assert.equal(res.statusCode, 204);
    assert.deepEqual(await appsOf('bob@example.com'), []);
    expectError(await scim('GET', `/Groups/${ids.admins}`), 404);
    expectError(await scim('DELETE', `/Groups/${ids.admins}`), 404);
    expectError(await scim('PATCH', `/Groups/${ids.admins}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [] }] }), 404);
    const audit = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`)).audit_events;
    assert.ok(audit.some((e) => e.action === 'group.unlinked' && e.actor_type === 'scim'));
    // The role can be linked again.
    assert.equal((await scim('POST', '/Groups', { displayName: 'crm:admin' })).statusCode, 201);
  });

  test('a role linked as a group is in use: the catalogue cannot drop it (409 product_in_use) until it is unlinked', async () => {
    const own = await ctx.createWorkspace('scim-linked');
    const ownScim = (method: string, path: string, body?: unknown) =>
      ctx.app.inject({
        method: method as 'GET',
        url: `/scim/v2${path}`,
        headers: { host: own.host, authorization: `Bearer ${own.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }) },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
    assert.equal((await ctx.admin('PUT', '/products/linked-only', { roles: ['user', 'guest'] })).statusCode, 201);
    const linked = await ownScim('POST', '/Groups', { schemas: [GROUP], displayName: 'linked-only:user' });
    assert.equal(linked.statusCode, 201, linked.body);
    const dropRole = await ctx.admin('PUT', '/products/linked-only', { roles: ['guest'] });
    assert.equal(dropRole.statusCode, 409);
    assert.equal(json<'Problem'>(dropRole).code, 'product_in_use');
    assert.match(json<'Problem'>(dropRole).detail, /SCIM groups link "user"/);
    assert.equal(json<'Problem'>(await ctx.admin('DELETE', '/products/linked-only')).code, 'product_in_use');
    assert.equal((await ctx.admin('PUT', '/products/linked-only', { roles: ['user'] })).statusCode, 200, 'an unlinked role may go');
    assert.equal((await ownScim('DELETE', `/Groups/${json<ScimGroup>(linked).id}`)).statusCode, 204);
    assert.equal((await ctx.admin('DELETE', '/products/linked-only')).statusCode, 204);
  });
});
