import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type ScimError, type ScimList } from '../helpers/json.ts';
import type { ScimResourceType, ScimSchema, ScimServiceProviderConfig, ScimUser } from '../helpers/scim-types.ts';

/*
 * SCIM 2.0 Users (docs/contract.md Part B, SCIM 2.0 provisioning; RFC 7643, RFC 7644): the mapping,
 * filters, paging, projection, PATCH as Okta and Entra ID send it, PUT, DELETE and
 * reactivation, errors with scimType, ETags, the last-owner rule, and the audit trail.
 */

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const WUM = 'urn:ietf:params:scim:schemas:extension:wum:2.0:User';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

describe(`SCIM Users [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;

  function scim(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    return ctx.app.inject({
      method: method as 'GET',
      url: `/scim/v2${path}`,
      headers: {
        host: ws.host,
        authorization: `Bearer ${ws.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  }

  function expectError(res: LightMyRequestResponse, status: number, scimType?: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.match(String(res.headers['content-type']), /^application\/scim\+json/);
    const body = json<ScimError>(res);
    assert.deepEqual(body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error']);
    assert.equal(body.status, String(status));
    assert.equal(body.scimType, scimType);
    assert.ok(body.detail);
  }

  async function create(userName: string, extra: Record<string, unknown> = {}): Promise<ScimUser> {
    const res = await scim('POST', '/Users', { schemas: [USER], userName, ...extra });
    assert.equal(res.statusCode, 201, res.body);
    return json<ScimUser>(res);
  }

  const filter = async (text: string, query = '') => {
    const res = await scim('GET', `/Users?filter=${encodeURIComponent(text)}${query}`);
    assert.equal(res.statusCode, 200, `${text}: ${res.body}`);
    return json<ScimList<ScimUser>>(res);
  };
  const names = (list: { Resources: ScimUser[] }) => list.Resources.map((r) => r.userName).sort();

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('scim-users');
    // The workspace's owner, added through the native API.
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('owner@example.com', { role: 'owner', first_name: 'Olga', last_name: 'Owner' }) })).statusCode, 201);
  });
  after(() => ctx.close());

  test('POST creates a user mapped as docs/contract.md says, and the native API sees the same user', async () => {
    const res = await scim('POST', '/Users', {
      schemas: [USER, ENTERPRISE],
      userName: 'Ada.Lovelace@Example.com',
      externalId: 'okta-00u1',
      name: { givenName: 'Ada', familyName: 'Lovelace', formatted: 'Ada Lovelace' },
      displayName: 'Ada L.',
      emails: [
        { value: 'Ada.Lovelace@Example.com', type: 'work', primary: true },
        { Value: 'ada@home.example', Type: 'home', Primary: 'True' },
      ],
      phoneNumbers: [{ value: '+44 20 0000', type: 'work' }],
      active: 'True',
      roles: [{ value: 'crm:admin' }, { value: 'helpdesk:agent' }],
      password: 'never-kept',
      [ENTERPRISE]: { Department: 'Analytical Engines', manager: { value: 'babbage' } },
      [WUM]: { workspaceRole: 'owner' },
      unknownAttribute: 'ignored',
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.match(String(res.headers['content-type']), /^application\/scim\+json/);
    const user = json<ScimUser>(res);
    assert.match(user.id, /^[0-9a-f-]{36}$/);
    assert.equal(res.headers.location, `http://${ws.host}/scim/v2/Users/${user.id}`);
    assert.equal(res.headers.etag, '"1"');
    assert.deepEqual(user.schemas, [USER, ENTERPRISE, WUM]);
    assert.equal(user.userName, 'Ada.Lovelace@Example.com');
    assert.equal(user.externalId, 'okta-00u1');
    assert.deepEqual(user.name, { formatted: 'Ada Lovelace', givenName: 'Ada', familyName: 'Lovelace' });
    assert.equal(user.displayName, 'Ada L.');
    assert.equal(user.active, true);
    assert.deepEqual(user.emails, [
      { value: 'Ada.Lovelace@Example.com', type: 'work', primary: true },
      { value: 'ada@home.example', type: 'home', primary: false },
    ]);
    assert.deepEqual(user.roles, [{ value: 'crm:admin' }, { value: 'helpdesk:agent' }]);
    assert.deepEqual(user[ENTERPRISE], { department: 'Analytical Engines', manager: { value: 'babbage' } });
    assert.deepEqual(user[WUM], { workspaceRole: 'owner' });
    assert.equal(user.password, undefined);
    assert.equal(user.unknownAttribute, undefined);
    assert.equal(user.meta.resourceType, 'User');
    assert.equal(user.meta.version, '"1"');
    assert.equal(user.meta.location, res.headers.location);
    assert.ok(!JSON.stringify(user).includes('never-kept'));

    const native = await ctx.api(ws, 'GET', '/users/ada.lovelace@example.com');
    assert.equal(native.statusCode, 200);
    assert.equal(json<'getUser'>(native).id, user.id);
    assert.equal(json<'getUser'>(native).role, 'owner');
    assert.equal(json<'getUser'>(native).first_name, 'Ada');
    assert.deepEqual(json<'getUser'>(native).apps, [{ name: 'crm', role: 'admin' }, { name: 'helpdesk', role: 'agent' }]);

    const read = await scim('GET', `/Users/${user.id}`);
    assert.deepEqual(json<ScimUser>(read), user, 'reads back what it wrote');
    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`);
    const created = json<'listWorkspaceAuditEvents'>(audit).audit_events.find((e) => e.action === 'user.created' && e.target_id === 'Ada.Lovelace@Example.com');
    assert.equal(created!.actor_type, 'scim');
    assert.equal(created!.actor_id, ws.apiKeyId);
  });

  test('POST without optional attributes gives the defaults; an active userName again is 409 uniqueness', async () => {
    const user = await create('plain@example.com');
    assert.deepEqual(user.name, { givenName: '-', familyName: '-' });
    assert.deepEqual(user.roles, []);
    assert.deepEqual(user[WUM], { workspaceRole: 'non_owner' });
    assert.equal(user.active, true);
    expectError(await scim('POST', '/Users', { userName: 'PLAIN@example.com' }), 409, 'uniqueness');
  });

  test('bad POST bodies are 400 with their scimType and change nothing', async () => {
    const before = (await filter('userName pr')).totalResults;
    expectError(await scim('POST', '/Users', { name: { givenName: 'No user name' } }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { userName: 'not an email' }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { userName: 5 }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { userName: 'r@example.com', roles: [{ value: 'no-colon' }] }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { userName: 'r@example.com', roles: [{ value: 'crm:king' }] }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { userName: 'r@example.com', roles: [{ value: 'nope:admin' }] }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { userName: 'r@example.com', [WUM]: { workspaceRole: 'king' } }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { userName: 'r@example.com', emails: { value: 'x' } }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', '{"userName": '), 400, 'invalidSyntax');
    expectError(await scim('POST', '/Users', '[1, 2]'), 400, 'invalidSyntax');
    expectError(await scim('POST', '/Users', { userName: 'r@example.com' }, { 'content-type': 'text/plain' }), 415);
    const noType = await ctx.app.inject({ method: 'POST', url: '/scim/v2/Users', headers: { host: ws.host, authorization: `Bearer ${ws.apiKey}` }, payload: '{}' });
    expectError(noType, 415);
    expectError(await scim('POST', '/Users', { userName: 'r@example.com', displayName: 'x'.repeat(70_000) }), 413);
    assert.equal((await filter('userName pr')).totalResults, before);
  });

  test('application/json bodies are accepted as well as application/scim+json', async () => {
    const res = await scim('POST', '/Users', { userName: 'json@example.com' }, { 'content-type': 'application/json; charset=utf-8' });
    assert.equal(res.statusCode, 201, res.body);
  });

  test('filters: every operator, and/or/not/parentheses, any-case attribute names, bare values', async () => {
    await create('grace@navy.example', { name: { givenName: 'Grace', familyName: 'Hopper' }, title: 'Rear Admiral', externalId: 'G-1', roles: [{ value: 'crm:member' }] });
    await create('alan@bletchley.example', { name: { givenName: 'Alan', familyName: 'Turing' }, title: 'Cryptanalyst', active: false, emails: [{ value: 'alan@home.example', type: 'home' }] });
    await create('katherine@nasa.example', { name: { givenName: 'Katherine', familyName: 'Johnson' }, addresses: [{ type: 'work', country: 'US', locality: 'Hampton' }, { type: 'home', country: 'CA' }] });

    assert.deepEqual(names(await filter('userName eq "GRACE@navy.example"')), ['grace@navy.example'], 'userName eq is case-insensitive');
    assert.deepEqual(names(await filter('USERNAME Eq "grace@navy.example"')), ['grace@navy.example'], 'attribute and operator in any case');
    assert.equal((await filter('userName eq "grace@navy"')).totalResults, 0, 'eq is exact');
    assert.ok(names(await filter('userName ne "grace@navy.example"')).every((n) => n !== 'grace@navy.example'));
    assert.deepEqual(names(await filter('name.familyName co "OPP"')), ['grace@navy.example']);
    assert.deepEqual(names(await filter('name.givenName sw "al"')), ['alan@bletchley.example']);
    assert.deepEqual(names(await filter('userName ew "@nasa.example"')), ['katherine@nasa.example']);
    assert.deepEqual(names(await filter('name.familyName gt "I" and name.familyName lt "K"')), ['katherine@nasa.example']);
    assert.deepEqual(names(await filter('name.familyName ge "Johnson" and name.familyName le "Johnson"')), ['katherine@nasa.example']);
    assert.deepEqual(names(await filter('title pr')), ['alan@bletchley.example', 'grace@navy.example']);
    assert.deepEqual(names(await filter('not (title pr) and userName ew ".example" and userName sw "k"')), ['katherine@nasa.example']);
    assert.deepEqual(
      names(await filter('(name.givenName eq "Grace" or name.givenName eq "Alan") and not (active eq false)')),
      ['grace@navy.example'],
    );
    assert.deepEqual(names(await filter('active eq "False"')), ['alan@bletchley.example'], '"False" reads as false');
    assert.deepEqual(names(await filter('externalId eq "G-1"')), ['grace@navy.example']);
    assert.equal((await filter('externalId eq "g-1"')).totalResults, 0, 'externalId is caseExact');
    assert.deepEqual(names(await filter('roles.value eq "crm:member" and userName ew "navy.example"')), ['grace@navy.example']);
    assert.deepEqual(names(await filter('emails.value eq "alan@home.example"')), ['alan@bletchley.example'], 'stored emails are searched');
    assert.deepEqual(names(await filter('emails co "navy"')), ['grace@navy.example'], 'the derived email is searched');
    assert.deepEqual(names(await filter('emails[type eq "home" and value sw "alan"]')), ['alan@bletchley.example']);
    assert.deepEqual(names(await filter('addresses[type eq "work" and country eq "US"]')), ['katherine@nasa.example']);
    assert.equal((await filter('addresses[type eq "home" and country eq "US"]')).totalResults, 0, 'both tests hold for one element');
    assert.deepEqual(names(await filter('name.FamilyName eq Hopper')), ['grace@navy.example'], 'a bare value is read as text');
    assert.equal((await filter('meta.Created gt 2015-10-10T14:38:21.8617979-07:00 and userName eq "grace@navy.example"')).totalResults, 1);
    assert.equal((await filter('meta.lastModified lt "2015-01-01T00:00:00Z"')).totalResults, 0);
    const grace = (await filter('userName eq "grace@navy.example"')).Resources[0]!;
    assert.deepEqual(names(await filter(`id eq "${grace.id}"`)), ['grace@navy.example']);
    assert.deepEqual(names(await filter(`urn:ietf:params:scim:schemas:extension:wum:2.0:User:workspaceRole eq "owner"`)), ['Ada.Lovelace@Example.com', 'owner@example.com']);
    assert.deepEqual((await filter('userName eq "nobody@example.com"')).Resources, [], 'no match is an empty list, not 404');
  });

  test('bad filters are 400 invalidFilter', async () => {
    for (const text of ['userName eq', 'userName xx "a"', '(userName eq "a"', 'bogus eq "a"', 'active gt true', 'meta.created gt "yesterday"', 'password eq "x"', 'name eq "x"', 'emails[value eq "a"', `${'title eq "a" or '.repeat(60)}title eq "a"`]) {
      expectError(await scim('GET', `/Users?filter=${encodeURIComponent(text)}`), 400, 'invalidFilter');
    }
    expectError(await scim('GET', '/Users?filter=a&filter=b'), 400, 'invalidValue');
  });

  test('startIndex and count page the list; count defaults to 100 and is at most 1,000', async () => {
    const all = await scim('GET', '/Users');
    const total = json<ScimList<ScimUser>>(all).totalResults;
    assert.ok(total >= 6);
    assert.equal(json<ScimList<ScimUser>>(all).itemsPerPage, total);
    const page = json<ScimList<ScimUser>>(await scim('GET', '/Users?startIndex=2&count=2'));
    assert.equal(page.totalResults, total);
    assert.equal(page.startIndex, 2);
    assert.equal(page.itemsPerPage, 2);
    assert.deepEqual(page.Resources.map((r) => r.id), json<ScimList<ScimUser>>(all).Resources.slice(1, 3).map((r) => r.id));
    assert.equal(json<ScimList<ScimUser>>(await scim('GET', '/Users?count=0')).itemsPerPage, 0);
    assert.equal(json<ScimList<ScimUser>>(await scim('GET', '/Users?count=-5')).itemsPerPage, 0);
    assert.equal(json<ScimList<ScimUser>>(await scim('GET', '/Users?startIndex=0&count=1')).startIndex, 1);
    assert.equal(json<ScimList<ScimUser>>(await scim('GET', `/Users?startIndex=${total + 1}`)).itemsPerPage, 0);
    assert.equal(json<ScimList<ScimUser>>(await scim('GET', '/Users?count=5000')).itemsPerPage, total, 'lowered to 1,000, all here');
    expectError(await scim('GET', '/Users?count=ten'), 400, 'invalidValue');
    expectError(await scim('GET', '/Users?startIndex=1.5'), 400, 'invalidValue');
  });

  test('attributes and excludedAttributes choose what is shown; id and schemas always are', async () => {
    const only = (await filter('userName eq "grace@navy.example"', '&attributes=userName,name.givenName,emails[type eq "work"]')).Resources[0]!;
    assert.deepEqual(Object.keys(only).sort(), ['emails', 'id', 'name', 'schemas', 'userName']);
    assert.deepEqual(only.name, { givenName: 'Grace' });
    assert.deepEqual(only.emails, [{ value: 'grace@navy.example', type: 'work', primary: true }]);
    const without = (await filter('userName eq "grace@navy.example"', '&excludedAttributes=emails,meta,id')).Resources[0]!;
    assert.equal(without.emails, undefined);
    assert.equal(without.meta, undefined);
    assert.ok(without.id, 'id is always returned');
    const ext = (await filter('userName eq "owner@example.com"', `&attributes=${WUM}:workspaceRole`)).Resources[0]!;
    assert.deepEqual(ext[WUM], { workspaceRole: 'owner' });
  });

  test('PATCH as Okta sends it: replace active (boolean and "False"), path-less value objects; 200 with the user', async () => {
    const user = await create('okta@example.com', { name: { givenName: 'O', familyName: 'K' } });
    let res = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(json<ScimUser>(res).active, false);
    assert.equal(res.headers.etag, '"2"');
    res = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'True' }] });
    assert.equal(json<ScimUser>(res).active, true);
    res = await scim('PATCH', `/Users/${user.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { 'name.givenName': 'Olive', 'name.familyName': 'Kite', title: 'Pilot', [`${ENTERPRISE}:department`]: 'Air', customAttribute: 'ignored' } }],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(json<ScimUser>(res).name, { givenName: 'Olive', familyName: 'Kite' });
    assert.equal(json<ScimUser>(res).title, 'Pilot');
    assert.deepEqual(json<ScimUser>(res)[ENTERPRISE], { department: 'Air' });
    const native = await ctx.api(ws, 'GET', '/users/okta@example.com');
    assert.equal(json<'getUser'>(native).first_name, 'Olive');
    assert.equal(json<'getUser'>(native).status, 'active');
  });

  test('PATCH as Entra ID sends it: capitalised ops, paths with filters, roles, userName, the wum extension', async () => {
    const user = await create('entra@example.com');
    const res = await scim('PATCH', `/Users/${user.id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: 'Add', path: 'displayName', value: 'Ent Ra' },
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'entra@example.com' },
        { op: 'Add', path: 'phoneNumbers', value: [{ value: '555', type: 'mobile' }] },
        { op: 'Replace', path: 'name.familyName', value: 'Ra' },
        { op: 'Add', path: 'roles', value: [{ value: 'analytics:viewer' }] },
        { op: 'Replace', path: `${WUM}:workspaceRole`, value: 'owner' },
        { op: 'Replace', path: 'externalId', value: 'aad-1' },
      ],
    });
    assert.equal(res.statusCode, 200, res.body);
    const patched = json<ScimUser>(res);
    assert.equal(patched.displayName, 'Ent Ra');
    assert.deepEqual(patched.phoneNumbers, [{ value: '555', type: 'mobile' }]);
    assert.equal(patched.name.familyName, 'Ra');
    assert.deepEqual(patched.roles, [{ value: 'analytics:viewer' }]);
    assert.equal(patched[WUM].workspaceRole, 'owner');
    assert.equal(patched.externalId, 'aad-1');
    let next = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'phoneNumbers[type eq "mobile"]' }, { op: 'remove', path: 'roles' }] });
    assert.equal(json<ScimUser>(next).phoneNumbers, undefined);
    assert.deepEqual(json<ScimUser>(next).roles, []);
    next = await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'userName', value: 'entra.renamed@example.com' }] });
    assert.equal(json<ScimUser>(next).userName, 'entra.renamed@example.com');
    assert.equal(json<ScimUser>(next).emails[0]!.value, 'entra.renamed@example.com');
    assert.equal(json<'getUser'>(await ctx.api(ws, 'GET', '/users/entra.renamed@example.com')).id, user.id, 'renamed in place, same id');
    expectError(await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'userName', value: 'owner@example.com' }] }), 409, 'uniqueness');
  });

  test('bad PATCH bodies are 400 with their scimType and change nothing', async () => {
    const user = await create('patch-errors@example.com');
    const cases: Array<[unknown, string]> = [
      [{ schemas: [PATCH_OP] }, 'invalidValue'],
      [{ schemas: [PATCH_OP], Operations: [] }, 'invalidValue'],
      [{ schemas: ['urn:wrong'], Operations: [{ op: 'replace', path: 'title', value: 'x' }] }, 'invalidSyntax'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'move', path: 'title', value: 'x' }] }, 'invalidSyntax'],
      [{ schemas: [PATCH_OP], Operations: ['x'] }, 'invalidSyntax'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'bogus', value: 'x' }] }, 'invalidPath'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'emails[type eq "work"', value: 'x' }] }, 'invalidPath'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'emails[type eq "fax"].value', value: 'x' }] }, 'noTarget'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'remove' }] }, 'noTarget'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'id', value: 'x' }] }, 'mutability'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: 'maybe' }] }, 'invalidValue'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'userName', value: 'not-an-email' }] }, 'invalidValue'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'roles', value: [{ value: 'crm:emperor' }] }] }, 'invalidValue'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'title' }] }, 'invalidValue'],
      [{ schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'title', value: 'fine' }, { op: 'replace', path: 'bogus', value: 'x' }] }, 'invalidPath'],
    ];
    for (const [body, scimType] of cases) {
      expectError(await scim('PATCH', `/Users/${user.id}`, body), 400, scimType);
    }
    const after = await scim('GET', `/Users/${user.id}`);
    assert.equal(after.headers.etag, '"1"', 'nothing changed');
    assert.equal(json<ScimUser>(after).title, undefined);
  });

  test('PUT replaces the profile, keeps roles and the workspace role when not given, and checks the body', async () => {
    const user = await create('put@example.com', { displayName: 'Old', title: 'Old title', roles: [{ value: 'crm:member' }], name: { givenName: 'P', familyName: 'Ut' } });
    const res = await scim('PUT', `/Users/${user.id}`, { schemas: [USER], id: 'ignored', userName: 'put@example.com', displayName: 'New', name: { givenName: 'Pat' }, active: true, meta: { created: '2001-01-01T00:00:00Z' } });
    assert.equal(res.statusCode, 200, res.body);
    const replaced = json<ScimUser>(res);
    assert.equal(replaced.id, user.id);
    assert.equal(replaced.displayName, 'New');
    assert.equal(replaced.title, undefined, 'an omitted profile attribute is cleared');
    assert.deepEqual(replaced.name, { givenName: 'Pat', familyName: '-' });
    assert.deepEqual(replaced.roles, [{ value: 'crm:member' }], 'roles granted (e.g. through groups) stay when not given');
    assert.equal(replaced.meta.created, user.meta.created);
    const withRoles = await scim('PUT', `/Users/${user.id}`, { userName: 'put@example.com', roles: [], active: false });
    assert.deepEqual(json<ScimUser>(withRoles).roles, []);
    assert.equal(json<ScimUser>(withRoles).active, false);
    expectError(await scim('PUT', `/Users/${user.id}`, { displayName: 'no userName' }), 400, 'invalidValue');
    expectError(await scim('PUT', '/Users/00000000-0000-4000-8000-000000000000', { userName: 'x@example.com' }), 404);
  });

  test('If-Match: a stale ETag is 412 and changes nothing; the current one and * pass', async () => {
    const user = await create('etag@example.com');
    const patch = { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'title', value: 'T' }] };
    expectError(await scim('PATCH', `/Users/${user.id}`, patch, { 'if-match': '"7"' }), 412);
    expectError(await scim('PUT', `/Users/${user.id}`, { userName: 'etag@example.com' }, { 'if-match': '"7"' }), 412);
    expectError(await scim('DELETE', `/Users/${user.id}`, undefined, { 'if-match': '"7"' }), 412);
    assert.equal((await scim('GET', `/Users/${user.id}`)).headers.etag, '"1"');
    assert.equal((await scim('PATCH', `/Users/${user.id}`, patch, { 'if-match': '"1"' })).statusCode, 200);
    assert.equal((await scim('PATCH', `/Users/${user.id}`, { ...patch, Operations: [{ op: 'replace', path: 'title', value: 'U' }] }, { 'if-match': '*' })).statusCode, 200);
    expectError(await scim('PATCH', `/Users/${user.id}`, patch, { 'if-match': 'garbage' }), 400, 'invalidValue');
  });

  test('the last active owner cannot be deactivated or demoted through SCIM (409)', async () => {
    const ws2 = await ctx.createWorkspace('scim-owner');
    assert.equal((await ctx.api(ws2, 'POST', '/users', { body: userBody('solo@example.com', { role: 'owner' }) })).statusCode, 201);
    const as2 = (method: string, path: string, body?: unknown) =>
      ctx.app.inject({
        method: method as 'GET',
        url: `/scim/v2${path}`,
        headers: { host: ws2.host, authorization: `Bearer ${ws2.apiKey}`, ...(body ? { 'content-type': 'application/scim+json' } : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
    const id = json<ScimList<ScimUser>>(await as2('GET', '/Users')).Resources[0]!.id;
    expectError(await as2('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] }), 409);
    expectError(await as2('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: `${WUM}:workspaceRole`, value: 'non_owner' }] }), 409);
    expectError(await as2('PUT', `/Users/${id}`, { userName: 'solo@example.com', active: false }), 409);
    expectError(await as2('DELETE', `/Users/${id}`), 409);
    assert.equal(json<'getUser'>(await ctx.api(ws2, 'GET', '/users/solo@example.com')).status, 'active');
  });

  test('DELETE deactivates: the user answers 404 and leaves lists, the native API still shows it; POST of its userName reactivates it', async () => {
    const user = await create('leaver@example.com', { roles: [{ value: 'crm:admin' }], title: 'Leaver' });
    const res = await scim('DELETE', `/Users/${user.id}`);
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, '');
    expectError(await scim('GET', `/Users/${user.id}`), 404);
    expectError(await scim('DELETE', `/Users/${user.id}`), 404);
    expectError(await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: true } }] }), 404);
    expectError(await scim('PUT', `/Users/${user.id}`, { userName: 'leaver@example.com' }), 404);
    assert.equal((await filter('userName eq "leaver@example.com"')).totalResults, 0);
    const native = await ctx.api(ws, 'GET', '/users/leaver@example.com');
    assert.equal(json<'getUser'>(native).status, 'deactivated', 'wum never erases a user');

    const again = await scim('POST', '/Users', { userName: 'LEAVER@example.com', name: { givenName: 'Back' } });
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(json<ScimUser>(again).id, user.id, 'the same user, reactivated');
    assert.equal(json<ScimUser>(again).active, true);
    assert.equal(json<ScimUser>(again).name.givenName, 'Back');
    assert.deepEqual(json<ScimUser>(again).roles, [], 'roles are replaced by the supplied ones');
    assert.equal((await filter('userName eq "leaver@example.com"')).totalResults, 1);
  });

  test('PATCH active:false keeps the user visible and findable (unlike DELETE)', async () => {
    const user = await create('paused@example.com');
    await scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] });
    assert.equal(json<ScimUser>(await scim('GET', `/Users/${user.id}`)).active, false);
    assert.equal((await filter('userName eq "paused@example.com" and active eq false')).totalResults, 1);
  });

  test('authentication, unknown paths and methods answer as SCIM errors', async () => {
    const plain = (headers: Record<string, string>) => ctx.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: { host: ws.host, ...headers } });
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'non-token' }, { authorization: 'Basic abc' }, { 'x-api-key': ws.apiKey }];
    for (const headers of attempts) {
      const res = await plain(headers);
      expectError(res, 401);
      assert.match(String(res.headers['www-authenticate']), /^Bearer/);
    }
    expectError(await plain({ authorization: 'Bearer wum_not_a_key' }), 401);
    expectError(await scim('GET', '/Nope'), 404);
    expectError(await scim('GET', '/Users/not-a-uuid'), 404);
    const notAllowed = await scim('DELETE', '/Users');
    expectError(notAllowed, 405);
    assert.match(String(notAllowed.headers.allow), /GET/);
    const wrongHost = await ctx.app.inject({ method: 'GET', url: '/scim/v2/Users', headers: { host: 'localhost:3000', authorization: `Bearer ${ws.apiKey}` } });
    expectError(wrongHost, 404);
    assert.equal((await scim('GET', '/users')).statusCode, 200, 'endpoint names in any case');
    assert.equal((await scim('GET', `/Users/?filter=${encodeURIComponent('userName pr')}`)).statusCode, 200, 'a trailing slash is tolerated');
  });

  test('discovery: ServiceProviderConfig, ResourceTypes and Schemas', async () => {
    const config = json<ScimServiceProviderConfig>(await scim('GET', '/ServiceProviderConfig'));
    assert.equal(config.patch.supported, true);
    assert.equal(config.filter.maxResults, 1000);
    assert.equal(config.etag.supported, true);
    assert.equal(config.bulk.supported, false);
    assert.equal(config.authenticationSchemes[0]!.type, 'oauthbearertoken');
    const types = json<ScimList<ScimResourceType>>(await scim('GET', '/ResourceTypes'));
    assert.deepEqual(types.Resources.map((r) => r.endpoint), ['/Users', '/Groups']);
    assert.equal(json<ScimResourceType>(await scim('GET', '/ResourceTypes/User')).schema, USER);
    const schemas = json<ScimList<ScimSchema>>(await scim('GET', '/Schemas'));
    assert.deepEqual(schemas.Resources.map((s) => s.id), [USER, 'urn:ietf:params:scim:schemas:core:2.0:Group', ENTERPRISE, WUM]);
    const user = json<ScimSchema>(await scim('GET', `/Schemas/${USER}`));
    assert.equal(user.description, 'User Account');
    assert.ok(user.attributes.some((a) => a.name === 'userName'));
    const wum = schemas.Resources.find((s) => s.id === WUM);
    assert.deepEqual(wum!.attributes.map((a) => [a.name, a.canonicalValues]), [['workspaceRole', ['owner', 'non_owner']]]);
    expectError(await scim('GET', '/Schemas/urn:nope'), 404);
  });
});
