import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { createClient } from 'wum/sdk';
import { API_KEY_SCOPES } from '../../src/core/api-keys/scopes.ts';
import { parseImportRecords } from '../../sdk/users-csv.ts';
import { importRows } from '../../sdk/users-import-rows.ts';
import { SCIM_PATCH_OP as PATCH_OP, SCIM_USER as USER, SCIM_WUM as WUM, scimRequest } from '../helpers/scim-request.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json, type ScimError } from '../helpers/json.ts';


/*
 * No key grows beyond its scopes (docs/security.md, "API keys and scopes"): creating, promoting,
 * reactivating or renaming an owner needs owners:write beside the route's scope, over the native
 * API, SCIM and the CSV import; a key of every scope is stored and shown as `*`.
 */
describe(`owners:write and the every-scope key [${BACKEND}]`, () => {
  let ctx: TestContext;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  async function keyFor(ws: TestWorkspace, scopes: string[] | undefined): Promise<TestWorkspace & { scopes: string[] }> {
    const res = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, scopes ? { scopes } : undefined);
    assert.equal(res.statusCode, 201, res.body);
    return { ...ws, apiKey: json<'createApiKey'>(res).key, apiKeyId: json<'createApiKey'>(res).id, scopes: json<'createApiKey'>(res).scopes };
  }

  /** A 403 insufficient_scope problem naming owners:write. */
  function assertOwnersRefused(res: LightMyRequestResponse, why: string): void {
    assert.equal(res.statusCode, 403, `${why}: ${res.body}`);
    assert.match(String(res.headers['content-type']), /^application\/problem\+json/, why);
    assert.equal(json<'Problem'>(res).code, 'insufficient_scope', why);
    assert.match(json<'Problem'>(res).detail, /owners:write/, why);
  }

  /** A SCIM error with status "403" naming owners:write. */
  function assertScimRefused(res: LightMyRequestResponse, why: string): void {
    assert.equal(res.statusCode, 403, `${why}: ${res.body}`);
    assert.match(String(res.headers['content-type']), /^application\/scim\+json/, why);
    const body = json<ScimError>(res);
    assert.deepEqual(body.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error'], why);
    assert.equal(body.status, '403', why);
    assert.match(body.detail ?? '', /owners:write/, why);
  }

  async function roleOf(ws: TestWorkspace, email: string): Promise<{ role: string; status: string } | undefined> {
    const res = await ctx.api(ws, 'GET', `/users/${email}`);
    return res.statusCode === 200 ? { role: json<'getUser'>(res).role, status: json<'getUser'>(res).status } : undefined;
  }

  const patch = (ws: TestWorkspace, email: string, user: Record<string, unknown>) => ctx.api(ws, 'PATCH', `/users/${email}`, { body: { user } });

  test('keys of every scope are stored and shown as ["*"]; a key listing fewer scopes keeps exactly those', async () => {
    const ws = await ctx.createWorkspace('every');
    assert.deepEqual((await keyFor(ws, undefined)).scopes, ['*'], 'no scopes given');
    assert.deepEqual((await keyFor(ws, ['*'])).scopes, ['*'], '* given');
    assert.deepEqual(
      (await keyFor(ws, [...API_KEY_SCOPES].reverse())).scopes,
      ['*'],
      'every scope listed',
    );
    assert.deepEqual(
      (await keyFor(ws, ['users:read', 'users:write', 'products:read', 'events:read', 'scim'])).scopes,
      ['users:read', 'users:write', 'products:read', 'events:read', 'scim'],
      'every scope but owners:write',
    );
    const listed = json<'listApiKeys'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`)).api_keys;
    assert.deepEqual(listed[0]!.scopes, ['*'], "the workspace's first key");
    const stored = (await ctx.database.db.execute(sql`select k.scopes from api_keys k join workspaces w on w.id = k.workspace_id
      where w.subdomain = ${ws.subdomain} order by k.created_at, k.id limit 1`)) as unknown as { rows: Array<{ scopes: string[] }> };
    assert.deepEqual(stored.rows[0]!.scopes, ['*'], 'stored as {*}');
  });

  test('the native API: a users:write key cannot create, promote, reactivate or rename an owner (403, nothing changes); owners:write and * keys can', async () => {
    const ws = await ctx.createWorkspace('owners');
    const writer = await keyFor(ws, ['users:read', 'users:write']);
    const almostAll = await keyFor(ws, ['users:read', 'users:write', 'products:read', 'events:read', 'scim']);
    const ownerWriter = await keyFor(ws, ['users:read', 'users:write', 'owners:write']);
    for (const email of ['o1@example.com', 'o2@example.com']) {
      assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(email, { role: 'owner' }) })).statusCode, 201, 'a * key makes owners');
    }

    for (const key of [writer, almostAll]) {
      assertOwnersRefused(await ctx.api(key, 'POST', '/users', { body: userBody('new-owner@example.com', { role: 'owner' }) }), 'create');
    }
    assert.equal(await roleOf(ws, 'new-owner@example.com'), undefined, 'nobody was created');

    assert.equal((await ctx.api(writer, 'POST', '/users', { body: userBody('plain@example.com') })).statusCode, 201, 'a non-owner is fine');
    assertOwnersRefused(await patch(writer, 'plain@example.com', { role: 'owner' }), 'promote');
    assert.deepEqual(await roleOf(ws, 'plain@example.com'), { role: 'non_owner', status: 'active' });

    assert.equal((await ctx.api(writer, 'DELETE', '/users/o2@example.com')).statusCode, 204, 'deactivating an owner grants nothing');
    assertOwnersRefused(await patch(writer, 'o2@example.com', { status: 'active' }), 'reactivate by PATCH');
    assertOwnersRefused(await ctx.api(writer, 'POST', '/users', { body: userBody('o2@example.com', { role: 'owner' }) }), 'reactivate by POST');
    assert.deepEqual(await roleOf(ws, 'o2@example.com'), { role: 'owner', status: 'deactivated' });
    assert.equal(
      (await ctx.api(writer, 'POST', '/users', { body: userBody('o2@example.com') })).statusCode,
      201,
      'reactivating the former owner as a non-owner is fine',
    );
    assert.equal((await patch(ws, 'o2@example.com', { role: 'owner' })).statusCode, 200);

    assertOwnersRefused(await patch(writer, 'o1@example.com', { email: 'mine@example.com' }), "rename an owner (another mailbox gets the owner's sign-in)");
    assert.equal(await roleOf(ws, 'mine@example.com'), undefined);
    const renamed = await patch(writer, 'o1@example.com', { first_name: 'Olga', apps: [{ name: 'crm', role: 'admin' }] });
    assert.equal(renamed.statusCode, 200, `names and apps of an owner: ${renamed.body}`);

    assert.equal((await ctx.api(ownerWriter, 'POST', '/users', { body: userBody('new-owner@example.com', { role: 'owner' }) })).statusCode, 201);
    assert.equal((await patch(ownerWriter, 'plain@example.com', { role: 'owner' })).statusCode, 200);
    assert.equal((await ctx.api(ownerWriter, 'DELETE', '/users/o2@example.com')).statusCode, 204);
    assert.equal((await patch(ownerWriter, 'o2@example.com', { status: 'active' })).statusCode, 200);
    assert.equal((await patch(ownerWriter, 'o1@example.com', { email: 'olga@example.com' })).statusCode, 200);

    const refused = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events`)).audit_events;
    assert.ok(
      !refused.some((e: { target_id: string }) => e.target_id === 'mine@example.com'),
      'a refused change writes no audit event',
    );
  });

  const scim = (key: TestWorkspace, method: string, path: string, body?: unknown) => scimRequest(ctx.app, key, method, path, body);

  test('SCIM: a scim key cannot create, promote (POST, PUT, PATCH) or reactivate an owner (SCIM error 403); scim with owners:write can', async () => {
    const ws = await ctx.createWorkspace('owners-scim');
    const connector = await keyFor(ws, ['scim']);
    const trusted = await keyFor(ws, ['scim', 'owners:write']);
    const owner = (userName: string, extra: Record<string, unknown> = {}) => ({ schemas: [USER], userName, [WUM]: { workspaceRole: 'owner' }, ...extra });

    assertScimRefused(await scim(connector, 'POST', '/Users', owner('boss@example.com')), 'POST an owner');
    assertScimRefused(await scim(connector, 'POST', '/Users', owner('boss@example.com', { active: false })), 'POST a deactivated owner');
    assert.equal(await roleOf(ws, 'boss@example.com'), undefined);

    const plain = await scim(connector, 'POST', '/Users', { schemas: [USER], userName: 'plain@example.com' });
    assert.equal(plain.statusCode, 201, plain.body);
    const id = json<{ id: string }>(plain).id;
    assertScimRefused(await scim(connector, 'PUT', `/Users/${id}`, owner('plain@example.com')), 'PUT workspaceRole owner');
    assertScimRefused(
      await scim(connector, 'PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { [`${WUM}:workspaceRole`]: 'owner' } }] }),
      'PATCH workspaceRole owner',
    );
    assert.deepEqual(await roleOf(ws, 'plain@example.com'), { role: 'non_owner', status: 'active' });

    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('keeper@example.com', { role: 'owner' }) })).statusCode, 201, 'another owner');
    const made = await scim(trusted, 'POST', '/Users', owner('boss@example.com'));
    assert.equal(made.statusCode, 201, made.body);
    const bossId = json<{ id: string }>(made).id;
    const deactivate = { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] };
    const reactivate = { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: true } }] };
    assert.equal((await scim(connector, 'PATCH', `/Users/${bossId}`, deactivate)).statusCode, 200, 'deactivating an owner grants nothing');
    assertScimRefused(await scim(connector, 'PATCH', `/Users/${bossId}`, reactivate), 'PATCH active true');
    assert.equal((await scim(connector, 'DELETE', `/Users/${bossId}`)).statusCode, 204);
    assertScimRefused(await scim(connector, 'POST', '/Users', owner('boss@example.com')), 're-create (reactivate) an owner');
    assert.deepEqual(await roleOf(ws, 'boss@example.com'), { role: 'owner', status: 'deactivated' });

    const recreated = await scim(trusted, 'POST', '/Users', owner('boss@example.com'));
    assert.equal(recreated.statusCode, 201, recreated.body);
    assert.equal(json<{ id: string }>(recreated).id, bossId);
    const promoted = await scim(trusted, 'PATCH', `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { [`${WUM}:workspaceRole`]: 'owner' } }],
    });
    assert.equal(promoted.statusCode, 200, promoted.body);
    assert.deepEqual(await roleOf(ws, 'plain@example.com'), { role: 'owner', status: 'active' });
  });

  test('the CSV import: owner rows are refused with insufficient_scope for a users:write key, added with owners:write', async () => {
    const ws = await ctx.createWorkspace('owners-import');
    const server = await ctx.buildApp();
    await server.listen({ host: '127.0.0.1', port: 0 });
    const { port } = server.server.address() as AddressInfo;
    const rows = parseImportRecords(
      [
        { cells: ['email', 'role', 'apps'], line: 1 },
        { cells: ['owner@example.com', 'owner', 'crm:member'], line: 2 },
        { cells: ['member@example.com', 'non_owner', 'crm:member'], line: 3 },
      ],
      'users.csv',
    );
    const client = (key: TestWorkspace) =>
      createClient({ baseUrl: `http://${ws.subdomain}.localhost:${port}`, apiKey: key.apiKey, connectTo: '127.0.0.1', retry: false });

    const writer = await keyFor(ws, ['users:read', 'users:write']);
    const refused = await importRows(client(writer), rows, { concurrency: 1 });
    assert.deepEqual(
      refused.map((r) => [r.email, r.outcome, r.code]),
      [
        ['owner@example.com', 'rejected', 'insufficient_scope'],
        ['member@example.com', 'added', undefined],
      ],
    );
    assert.match(refused[0]!.detail!, /owners:write/);
    assert.equal(await roleOf(ws, 'owner@example.com'), undefined);

    const ownerWriter = await keyFor(ws, ['users:read', 'users:write', 'owners:write']);
    const added = await importRows(client(ownerWriter), rows, { concurrency: 1 });
    assert.deepEqual(added.map((r) => [r.email, r.outcome]), [
      ['owner@example.com', 'added'],
      ['member@example.com', 'skipped'],
    ]);
    assert.deepEqual(await roleOf(ws, 'owner@example.com'), { role: 'owner', status: 'active' });
  });

  test('the migration makes keys of every former scope "*" and leaves narrower keys exactly as they were', async () => {
    const ws = await ctx.createWorkspace('owners-migration');
    const narrow = await keyFor(ws, ['users:read', 'users:write', 'scim']);
    // The key as migration 0008 left it: every scope there was then, listed by name.
    await ctx.database.db.execute(sql`update api_keys set scopes = '{users:read,users:write,products:read,events:read,scim}' where id = ${ws.apiKeyId}`);
    const file = readFileSync(new URL('../../src/storage/migrations/0014_api_key_every_scope_and_session_ends.sql', import.meta.url), 'utf8');
    const update = file.split('--> statement-breakpoint').find((statement) => statement.includes('UPDATE "api_keys"'))!;
    await ctx.database.db.execute(sql.raw(update));
    const scopes = Object.fromEntries(
      json<'listApiKeys'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`)).api_keys.map((k: { id: string; scopes: string[] }) => [k.id, k.scopes]),
    );
    assert.deepEqual(scopes[ws.apiKeyId], ['*'], 'a key of every former scope holds every scope, owners:write included');
    assert.deepEqual(scopes[narrow.apiKeyId], ['users:read', 'users:write', 'scim'], 'a narrow key gains nothing');
    assertOwnersRefused(await ctx.api(narrow, 'POST', '/users', { body: userBody('x@example.com', { role: 'owner' }) }), 'no owners:write gained');
    assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody('x@example.com', { role: 'owner' }) })).statusCode, 201, 'the * key makes owners');
  });
});
