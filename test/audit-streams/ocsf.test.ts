// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import { OCSF_VERSION, toOcsf } from '../../src/audit-streams/ocsf.ts';
import type { Actor } from '../../src/core/actor.ts';
import type { AuditEvent } from '../../src/core/audit/audit-repository.ts';

/*
 * The `ocsf` format against the OCSF schema (docs/api.md, "OCSF mapping"): every mapped row has
 * its class's required attributes, of their types, only attributes the schema defines, the
 * objects' required attributes and at_least_one constraints, and the class and activity the
 * mapping table gives. The fixture holds the schema's definitions of the classes and objects
 * used; its `source` names the schema release and commit it was read from.
 */

interface Attribute {
  readonly type: string;
  readonly is_array?: boolean;
}
interface Definition {
  readonly required: Record<string, Attribute>;
  readonly attributes: Record<string, Attribute>;
  readonly at_least_one?: readonly string[];
}
interface ClassDefinition extends Definition {
  readonly name: string;
  readonly category_uid: number;
  readonly activity_ids: Record<string, string>;
}
const schema = JSON.parse(readFileSync(new URL('../fixtures/ocsf-1.8.0-classes.json', import.meta.url), 'utf8')) as {
  readonly version: string;
  readonly scalar_types: Record<string, string>;
  readonly classes: Record<string, ClassDefinition>;
  readonly objects: Record<string, Definition>;
};

const JSON_TYPES: Record<string, object> = { integer_t: { type: 'integer' }, long_t: { type: 'integer' }, string_t: { type: 'string' }, boolean_t: { type: 'boolean' }, json_t: {} };

/** The JSON Schema of an attribute: a scalar by its base type, an object the fixture defines by reference, any other object as an object. */
function attributeSchema(attribute: Attribute): object {
  const base = schema.scalar_types[attribute.type];
  const one = base !== undefined ? JSON_TYPES[base]! : attribute.type in schema.objects ? { $ref: `#/$defs/${attribute.type}` } : { type: 'object' };
  return attribute.is_array ? { type: 'array', items: one } : one;
}

function definitionSchema(definition: Definition): object {
  return {
    type: 'object',
    required: Object.keys(definition.required),
    properties: Object.fromEntries(Object.entries(definition.attributes).map(([name, attribute]) => [name, attributeSchema(attribute)])),
    additionalProperties: false,
    ...(definition.at_least_one ? { anyOf: definition.at_least_one.map((name) => ({ required: [name] })) } : {}),
  };
}

const ajv = new Ajv({ allErrors: true });
const $defs = Object.fromEntries(Object.entries(schema.objects).map(([name, definition]) => [name, definitionSchema(definition)]));
const validators = new Map<number, ValidateFunction>(
  Object.entries(schema.classes).map(([uid, definition]) => [Number(uid), ajv.compile({ ...definitionSchema(definition), $defs })]),
);

const PRODUCT = { name: 'wum', version: '0.1.0' };
const AT = new Date('2026-11-26T12:34:56.789Z');
const ACTORS: Record<Actor['type'], Actor> = {
  person: { type: 'person', id: 'u-owner', label: 'owner@acme.test', requestId: 'req-1' },
  api_key: { type: 'api_key', id: 'key-1', label: 'ci (wum_AbCd1234)', requestId: 'req-2' },
  scim: { type: 'scim', id: 'key-2', label: 'okta (wum_Scim0001)', requestId: 'req-3' },
  operator: { type: 'operator', id: null, label: 'operator', requestId: 'req-4' },
  system: { type: 'system', id: null, label: 'system', requestId: null },
  policy: { type: 'policy', id: 'inactivity_policy', label: 'inactivity policy', requestId: null },
};

const alice = (changes: Record<string, unknown> = {}) => ({
  id: 'u-alice',
  email: 'alice@acme.test',
  role: 'non_owner',
  first_name: 'Alice',
  last_name: 'A',
  apps: [{ name: 'crm', role: 'viewer' }],
  status: 'active',
  expires_at: null,
  ...changes,
});

let nextId = 1;
function row(action: string, actor: Actor, targetType: string, targetId: string, before: unknown, after: unknown, userId?: string): AuditEvent & { workspace: string } {
  return { id: nextId++, workspaceId: 7, occurredAt: AT, actor, action, targetType, targetId, ...(userId ? { userId } : {}), before, after, workspace: 'acme' };
}
const userRow = (action: string, actor: Actor, before: unknown, after: unknown) => row(action, actor, 'user', 'alice@acme.test', before, after, 'u-alice');

/** Every audit action wum writes (docs/api.md lists them), with the class and activity the mapping gives it. */
const CASES: ReadonlyArray<readonly [string, AuditEvent & { workspace: string }, number, number]> = [
  ['user created', userRow('user.created', ACTORS.api_key, null, alice()), 3001, 1],
  ['user deactivated', userRow('user.deactivated', ACTORS.person, alice(), alice({ status: 'inactive' })), 3001, 5],
  ['user deactivated by a policy', userRow('user.deactivated', ACTORS.policy, alice(), alice({ status: 'inactive' })), 3001, 5],
  ['user reactivated', userRow('user.reactivated', ACTORS.scim, alice({ status: 'inactive' }), alice()), 3001, 2],
  ['user renamed', userRow('user.updated', ACTORS.api_key, alice(), alice({ first_name: 'Alicia' })), 6003, 3],
  ['made an owner', userRow('user.updated', ACTORS.person, alice(), alice({ role: 'owner' })), 3005, 1],
  ['product role revoked', userRow('user.updated', ACTORS.api_key, alice(), alice({ apps: [] })), 3005, 2],
  ['product role replaced', userRow('user.updated', ACTORS.operator, alice(), alice({ apps: [{ name: 'crm', role: 'admin' }] })), 3005, 1],
  ['added to a SCIM group', userRow('user.updated', ACTORS.scim, alice(), alice({ apps: [{ name: 'crm', role: 'viewer' }, { name: 'helpdesk', role: 'agent' }] })), 3006, 3],
  ['removed from a SCIM group', userRow('user.updated', ACTORS.scim, alice(), alice({ apps: [] })), 3006, 4],
  ['expiry deferred', userRow('user.expiry_deferred', ACTORS.system, alice(), alice()), 6003, 3],
  ['group linked', row('group.linked', ACTORS.scim, 'group', 'crm:admin', null, { id: 'g-1', display_name: 'crm:admin', external_id: null }), 3006, 6],
  ['group updated', row('group.updated', ACTORS.scim, 'group', 'crm:admin', { id: 'g-1', external_id: null }, { id: 'g-1', external_id: 'x' }), 6003, 3],
  ['group unlinked', row('group.unlinked', ACTORS.scim, 'group', 'crm:admin', { id: 'g-1', display_name: 'crm:admin' }, null), 3006, 5],
  ['api key created', row('api_key.created', ACTORS.person, 'api_key', 'key-9', null, { name: 'ci' }), 6003, 1],
  ['api key revoked', row('api_key.revoked', ACTORS.operator, 'api_key', 'key-9', { name: 'ci' }, null), 6003, 4],
  ['signed in', row('console.signed_in', ACTORS.person, 'user', 'key-7', null, { expires_at: AT.toISOString() }), 6003, 1],
  ['signed out', row('console.signed_out', ACTORS.person, 'user', 'key-7', null, null), 6003, 4],
  ['identity provider set first', row('identity_provider.set', ACTORS.person, 'identity_provider', 'acme', null, { issuer: 'https://idp.test' }), 6003, 1],
  ['identity provider changed', row('identity_provider.set', ACTORS.person, 'identity_provider', 'acme', { issuer: 'a' }, { issuer: 'b' }), 6003, 3],
  ['identity provider removed', row('identity_provider.removed', ACTORS.person, 'identity_provider', 'acme', { issuer: 'b' }, null), 6003, 4],
  ['inactivity policy set', row('inactivity_policy.set', ACTORS.api_key, 'workspace', 'acme', null, { after: 'P90D' }), 6003, 1],
  ['inactivity policy removed', row('inactivity_policy.removed', ACTORS.api_key, 'workspace', 'acme', { after: 'P90D' }, null), 6003, 4],
  ['expiry policy set', row('expiry_policy.set', ACTORS.operator, 'workspace', 'acme', { warn: 'P7D' }, { warn: 'P3D' }), 6003, 3],
  ['product created', row('product.created', ACTORS.operator, 'product', 'crm', null, { name: 'crm' }), 6003, 1],
  ['product updated', row('product.updated', ACTORS.operator, 'product', 'crm', { roles: [] }, { roles: ['admin'] }), 6003, 3],
  ['product deleted', row('product.deleted', ACTORS.operator, 'product', 'crm', { name: 'crm' }, null), 6003, 4],
  ['webhook endpoint created', row('webhook_endpoint.created', ACTORS.operator, 'webhook_endpoint', 'we-1', null, { url: 'https://r.test' }), 6003, 1],
  ['webhook endpoint updated', row('webhook_endpoint.updated', ACTORS.person, 'webhook_endpoint', 'we-1', { url: 'a' }, { url: 'b' }), 6003, 3],
  ['webhook endpoint disabled', row('webhook_endpoint.disabled', ACTORS.system, 'webhook_endpoint', 'we-1', { disabled: false }, { disabled: true }), 6003, 3],
  ['webhook secret rotated', row('webhook_endpoint.secret_rotated', ACTORS.operator, 'webhook_endpoint', 'we-1', null, null), 6003, 3],
  ['webhook endpoint deleted', row('webhook_endpoint.deleted', ACTORS.operator, 'webhook_endpoint', 'we-1', { url: 'b' }, null), 6003, 4],
  ['webhook delivery redelivered', row('webhook_delivery.redelivered', ACTORS.operator, 'webhook_delivery', 'd-1', { status: 'failed' }, { status: 'pending' }), 6003, 3],
  ['workspace created', row('workspace.created', ACTORS.operator, 'workspace', 'acme', null, { subdomain: 'acme' }), 6003, 1],
  ['workspace deleted', row('workspace.deleted', ACTORS.operator, 'workspace', 'acme', { subdomain: 'acme' }, null), 6003, 4],
];

describe('OCSF mapping of audit rows', () => {
  test(`the fixture is OCSF ${OCSF_VERSION}, the version the events declare`, () => {
    assert.equal(schema.version, OCSF_VERSION);
  });

  for (const [name, event, classUid, activityId] of CASES) {
    test(`${name} (${event.action}, ${event.actor.type}) → ${schema.classes[classUid]!.name}: ${schema.classes[classUid]!.activity_ids[activityId]}`, () => {
      const ocsf = toOcsf(event, PRODUCT);
      const definition = schema.classes[classUid]!;
      assert.equal(ocsf.class_uid, classUid);
      assert.equal(ocsf.category_uid, definition.category_uid);
      assert.equal(ocsf.activity_id, activityId);
      assert.equal(ocsf.activity_name, definition.activity_ids[activityId]);
      assert.equal(ocsf.class_name, definition.name);
      assert.equal(ocsf.type_uid, classUid * 100 + activityId);
      const validate = validators.get(classUid)!;
      assert.ok(validate(ocsf), `${event.action}: ${ajv.errorsText(validate.errors)}`);

      assert.equal(ocsf.time, AT.getTime());
      assert.equal(ocsf.severity_id, 1);
      assert.deepEqual(ocsf.metadata.product, { name: 'wum', vendor_name: 'wum', version: '0.1.0' });
      assert.equal(ocsf.metadata.uid, String(event.id));
      assert.equal(ocsf.metadata.version, OCSF_VERSION);
      assert.equal(ocsf.metadata.correlation_uid, event.actor.requestId ?? undefined);
      assert.equal(ocsf.metadata.tenant_uid, 'acme');
      assert.equal(ocsf.unmapped.action, event.action);
      assert.equal(ocsf.unmapped.workspace, 'acme');
      assert.deepEqual(ocsf.unmapped.before, event.before ?? undefined);
      assert.deepEqual(ocsf.unmapped.after, event.after ?? undefined);
      if (event.targetType === 'user' && classUid !== 6003) {
        assert.deepEqual(ocsf.user, { uid: 'u-alice', name: 'alice@acme.test', email_addr: 'alice@acme.test', ...(event.after as { role: string }).role === 'owner' ? { type_id: 2, type: 'Admin' } : { type_id: 1, type: 'User' } });
      }
    });
  }

  test('the actor is the person or operator as a user, anything else as the app', () => {
    const actors = Object.values(ACTORS).map((actor) => toOcsf(userRow('user.created', actor, null, alice()), PRODUCT).actor);
    assert.deepEqual(actors, [
      { user: { uid: 'u-owner', name: 'owner@acme.test', email_addr: 'owner@acme.test', type_id: 1, type: 'User' } },
      { app_name: 'ci (wum_AbCd1234)', app_uid: 'key-1' },
      { app_name: 'okta (wum_Scim0001)', app_uid: 'key-2' },
      { user: { name: 'operator', type_id: 2, type: 'Admin' } },
      { app_name: 'system' },
      { app_name: 'inactivity policy', app_uid: 'inactivity_policy' },
    ]);
  });

  test('privileges name what changed; a SCIM group change names the group', () => {
    const assigned = toOcsf(userRow('user.updated', ACTORS.operator, alice(), alice({ role: 'owner', apps: [{ name: 'crm', role: 'admin' }] })), PRODUCT);
    assert.deepEqual(assigned.privileges, ['role:owner', 'app:crm:admin']);
    assert.deepEqual(assigned.unmapped.revoked_privileges, ['role:non_owner', 'app:crm:viewer']);
    const added = toOcsf(userRow('user.updated', ACTORS.scim, alice({ apps: [] }), alice()), PRODUCT);
    assert.deepEqual(added.group, { name: 'crm:viewer', type: 'product role' });
    assert.equal((added.user as { uid: string }).uid, 'u-alice');
  });

  test('the schema check itself refuses what OCSF refuses', () => {
    const { user: _user, ...withoutUser } = toOcsf(userRow('user.created', ACTORS.person, null, alice()), PRODUCT);
    assert.equal(validators.get(3001)!(withoutUser), false, 'Account Change requires user');
    const ocsf = toOcsf(userRow('user.created', ACTORS.person, null, alice()), PRODUCT);
    assert.equal(validators.get(3001)!({ ...ocsf, users: [] }), false, 'an attribute the class does not define');
    assert.equal(validators.get(3001)!({ ...ocsf, time: AT.toISOString() }), false, 'time is a number');
    assert.equal(validators.get(3001)!({ ...ocsf, actor: {} }), false, 'an actor names someone');
  });

  test('an event without a workspace (the operator catalogue) has no tenant', () => {
    const ocsf = toOcsf({ ...row('product.created', ACTORS.operator, 'product', 'crm', null, {}), workspace: null }, PRODUCT);
    assert.equal(ocsf.metadata.tenant_uid, undefined);
    assert.ok(validators.get(6003)!(ocsf));
  });
});
