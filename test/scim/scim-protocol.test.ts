// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AppError } from '../../src/core/errors.ts';
import type { User } from '../../src/core/users/user.ts';
import { canonicalScimTarget } from '../../src/scim/constants.ts';
import { toScimError } from '../../src/scim/errors.ts';
import { parseScimFilter, parseScimPath } from '../../src/scim/filter.ts';
import { readGroupPatch } from '../../src/scim/group-resource.ts';
import { patchUserResource, readPatchOperations } from '../../src/scim/patch-request.ts';
import { project, readProjection } from '../../src/scim/projection.ts';
import { userDefinition } from '../../src/scim/schema-definitions.ts';
import { userFilterCondition } from '../../src/scim/user-filter.ts';
import { readUserResource, toUserResource } from '../../src/scim/user-resource.ts';

/* The SCIM protocol layer alone (src/scim): pure functions, no server, no database. */

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return (error as AppError).code;
  }
  return undefined;
};

const USER: User = {
  id: '6f1c2a3e-0000-4000-8000-000000000001',
  email: 'ada@example.com',
  role: 'non_owner',
  firstName: 'Ada',
  lastName: 'Lovelace',
  apps: [{ name: 'crm', role: 'admin' }],
  status: 'active',
  externalId: 'ext-1',
  scimAttributes: { displayName: 'Ada', emails: [{ value: 'ada@home.example', type: 'home', primary: false }] },
  scimDeleted: false,
  expiresAt: null,
  createdAt: new Date('2025-01-01T00:00:00Z'),
  updatedAt: new Date('2025-01-02T00:00:00Z'),
  version: 3,
  lastActiveAt: null,
};

describe('filters', () => {
  test('the grammar: precedence, not, parentheses, value paths, bare values read as text', () => {
    assert.deepEqual(parseScimFilter('a eq "x" or b eq "y" and c pr'), {
      op: 'or',
      filters: [
        { op: 'eq', attrPath: 'a', compValue: 'x' },
        { op: 'and', filters: [{ op: 'eq', attrPath: 'b', compValue: 'y' }, { op: 'pr', attrPath: 'c' }] },
      ],
    });
    assert.deepEqual(parseScimFilter('name.familyName eq Employee'), { op: 'eq', attrPath: 'name.familyName', compValue: 'Employee' });
    assert.deepEqual(parseScimFilter('((x eq 1))'), { op: 'eq', attrPath: 'x', compValue: 1 });
    assert.deepEqual(parseScimFilter('x eq true'), { op: 'eq', attrPath: 'x', compValue: true });
    assert.equal(parseScimFilter('meta.created gt 2015-10-10T14:38:21.8617979-07:00').op, 'gt');
    for (const bad of ['', 'userName eq', 'a eq "b" c', '(a pr', 'a[b eq 1', `${'a pr or '.repeat(60)}a pr`]) {
      assert.equal(code(() => parseScimFilter(bad)), 'invalid_filter', bad);
    }
  });

  test('paths: plain, sub-attribute, value filter with and without a sub-attribute', () => {
    assert.deepEqual(parseScimPath('name.givenName'), { attribute: 'name.givenName' });
    assert.deepEqual(parseScimPath('members[value eq "1"]'), { attribute: 'members', filter: { op: 'eq', attrPath: 'value', compValue: '1' } });
    assert.deepEqual(parseScimPath('emails[type eq "work"].value'), {
      attribute: 'emails',
      filter: { op: 'eq', attrPath: 'type', compValue: 'work' },
      subAttribute: 'value',
    });
    for (const bad of ['', 'a eq "b"', 'emails[type eq "work"', '[x]', 'a b']) assert.equal(code(() => parseScimPath(bad)), 'invalid_path', bad);
  });

  test('to conditions: modelled attributes become columns, others paths into the SCIM attributes', () => {
    assert.deepEqual(userFilterCondition(parseScimFilter('USERNAME eq "A@b.c"')), { op: 'eq', field: 'email', value: 'A@b.c', caseExact: false });
    assert.deepEqual(userFilterCondition(parseScimFilter('active eq "False"')), { op: 'eq', field: 'status', value: 'deactivated', caseExact: true });
    assert.deepEqual(userFilterCondition(parseScimFilter('name.FamilyName sw "L"')), { op: 'sw', field: 'lastName', value: 'L', caseExact: false });
    assert.deepEqual(userFilterCondition(parseScimFilter('roles.value eq "crm:admin"')), { op: 'eq', field: 'app', value: 'crm:admin', caseExact: true });
    assert.deepEqual(userFilterCondition(parseScimFilter('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:Department co "x"')), {
      op: 'co',
      field: { scimAttribute: ['urn:ietf:params:scim:schemas:extension:enterprise:2.0:User', 'department'] },
      value: 'x',
      caseExact: false,
    });
    assert.deepEqual(userFilterCondition(parseScimFilter('addresses[type eq "work"]')), {
      op: 'any',
      path: ['addresses'],
      condition: { op: 'eq', field: { scimAttribute: ['type'] }, value: 'work', caseExact: false },
    });
    const created = userFilterCondition(parseScimFilter('meta.created gt "2020-01-01T00:00:00Z"'));
    assert.deepEqual(created, { op: 'gt', field: 'createdAt', value: new Date('2020-01-01T00:00:00Z'), caseExact: true });
    for (const bad of ['nope eq 1', 'active gt true', 'userName gt', 'password eq "x"', 'meta.created co "2020"', 'name eq "x"', 'emails[emails[value eq "x"]]']) {
      assert.equal(code(() => userFilterCondition(parseScimFilter(bad))), 'invalid_filter', bad);
    }
  });
});

describe('resources', () => {
  test('a user renders with the mapping of docs/contract.md, and reads back to the same state', async () => {
    const resource = toUserResource(USER, 'https://acme.example.com/scim/v2');
    assert.equal(resource.userName, 'ada@example.com');
    assert.deepEqual(resource.emails, [
      { value: 'ada@example.com', type: 'work', primary: true },
      { value: 'ada@home.example', type: 'home', primary: false },
    ]);
    assert.deepEqual(resource.roles, [{ value: 'crm:admin' }]);
    assert.deepEqual((resource.meta as Record<string, unknown>).version, '"3"');
    const state = await readUserResource(resource, 'replace');
    assert.deepEqual(state, {
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: 'Lovelace',
      externalId: 'ext-1',
      scimAttributes: USER.scimAttributes,
      status: 'active',
      role: 'non_owner',
      apps: [{ name: 'crm', role: 'admin' }],
    });
  });

  test('PATCH operations apply as Okta and Entra ID send them, or fail with their code', async () => {
    const resource = toUserResource(USER, 'https://x/scim/v2');
    const ops = readPatchOperations({ Operations: [{ op: 'Replace', path: 'active', value: 'False' }, { op: 'add', value: { 'name.givenName': 'Augusta', custom: 1 } }] });
    const patched = (await patchUserResource(resource, ops))!;
    assert.equal(patched.active, false);
    assert.equal((patched.name as { givenName: string }).givenName, 'Augusta');
    assert.equal(await patchUserResource(resource, readPatchOperations({ Operations: [{ op: 'replace', path: 'userName', value: 'ada@example.com' }] })), undefined, 'no change');
    await assert.rejects(patchUserResource(resource, readPatchOperations({ Operations: [{ op: 'replace', path: 'nope', value: 1 }] })), { code: 'invalid_path' });
    await assert.rejects(patchUserResource(resource, readPatchOperations({ Operations: [{ op: 'replace', path: 'emails[type eq "x"].value', value: 'y' }] })), { code: 'no_target' });
    assert.equal(code(() => readPatchOperations({ Operations: [{ op: 'copy', path: 'a' }] })), 'invalid_syntax');
    assert.equal(code(() => readPatchOperations({ schemas: ['x'], Operations: [{ op: 'add', path: 'a', value: 1 }] })), 'invalid_syntax');
  });

  test('group PATCH operations fold into one membership change', () => {
    const patch = readGroupPatch(
      readPatchOperations({
        Operations: [
          { op: 'add', path: 'members', value: [{ value: 'A' }, { value: 'b' }] },
          { op: 'remove', path: 'members[value eq "b" or value eq "c"]' },
          { op: 'replace', value: { displayName: 'crm:admin', externalId: 'g' } },
        ],
      }),
    );
    assert.deepEqual(patch, { displayName: 'crm:admin', externalId: 'g', members: { base: 'keep', add: ['a'], remove: ['b', 'c'] } });
    const cleared = readGroupPatch(readPatchOperations({ Operations: [{ op: 'remove', path: 'members' }, { op: 'add', path: 'members', value: 'x' }] }));
    assert.deepEqual(cleared.members, { base: 'none', add: ['x'], remove: [] });
  });

  test('projection: attributes, sub-attributes, value filters, excluded attributes', () => {
    const resource = toUserResource(USER, 'https://x/scim/v2');
    const shown = project(resource, readProjection(userDefinition, { attributes: 'name.familyName,emails[type eq "home"].value' }));
    assert.deepEqual(shown, { schemas: resource.schemas, id: USER.id, name: { familyName: 'Lovelace' }, emails: [{ value: 'ada@home.example' }] });
    const hidden = project(resource, readProjection(userDefinition, { excludedAttributes: 'emails,meta.location,id' }));
    assert.equal(hidden.emails, undefined);
    assert.equal((hidden.meta as { location?: string }).location, undefined);
    assert.equal(hidden.id, USER.id);
  });
});

describe('errors and addressing', () => {
  test('errors render as SCIM errors with their scimType', () => {
    assert.deepEqual(toScimError(new AppError('invalid_filter', 'bad')), {
      status: 400,
      body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '400', scimType: 'invalidFilter', detail: 'bad' },
    });
    assert.equal(toScimError(new AppError('user_already_exists', 'x')).body.scimType, 'uniqueness');
    assert.equal(toScimError(new AppError('unknown_product_role', 'x')).status, 400);
    assert.equal(toScimError(new AppError('last_owner', 'x')).body.scimType, undefined);
    assert.equal(toScimError(new AppError('rate_limited', 'x')).body.status, '429');
  });

  test('endpoint names are read in any case and without a trailing slash', () => {
    assert.equal(canonicalScimTarget('/scim/v2/users?count=1'), '/scim/v2/Users?count=1');
    assert.equal(canonicalScimTarget('/scim/v2/Users/?filter=x'), '/scim/v2/Users?filter=x');
    assert.equal(canonicalScimTarget('/scim/v2/GROUPS/abc'), '/scim/v2/Groups/abc');
    assert.equal(canonicalScimTarget('/scim/v2/other'), '/scim/v2/other');
    assert.equal(canonicalScimTarget('/api/external/v2/users'), '/api/external/v2/users');
  });
});
