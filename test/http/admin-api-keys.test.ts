import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface ListedKey {
  id: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

describe(`admin API: API keys [${BACKEND}]`, () => {
  let ctx: TestContext;

  /** The workspace addressed with another key. */
  const withKey = (ws: TestWorkspace, apiKey: string): TestWorkspace => ({ ...ws, apiKey });

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, code);
  }

  async function listKeys(ws: TestWorkspace): Promise<ListedKey[]> {
    const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`);
    assert.equal(res.statusCode, 200, res.body);
    return json<'listApiKeys'>(res).api_keys;
  }

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
  });
  after(() => ctx.close());

  test('POST …/api-keys → 201 {id, key, prefix, created_at}; the new key works at once', async () => {
    const ws = await ctx.createWorkspace('keys');
    const res = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`);
    assert.equal(res.statusCode, 201, res.body);
    const key = json<'createApiKey'>(res);
    assert.deepEqual(Object.keys(key).sort(), ['created_at', 'created_by', 'expires_at', 'id', 'key', 'name', 'prefix', 'scopes']);
    assert.deepEqual(key.scopes, ['*'], 'no scopes asked: every scope, present and future');
    assert.deepEqual(key.created_by, { type: 'operator', id: null, label: 'operator' });
    assert.match(key.id, UUID);
    assert.notEqual(key.id, ws.apiKeyId);
    assert.match(key.key, /^wum_/);
    assert.notEqual(key.key, ws.apiKey);
    assert.ok(key.key.startsWith(key.prefix) && key.prefix.length < key.key.length, 'prefix is a prefix of the key');
    assert.match(key.created_at, TIMESTAMP);
    const used = await ctx.api(withKey(ws, key.key), 'POST', '/users', { body: userBody('new-key@example.com') });
    assert.equal(used.statusCode, 201, used.body);
  });

  test('an empty JSON body is accepted too', async () => {
    const ws = await ctx.createWorkspace('keys');
    const res = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, {});
    assert.equal(res.statusCode, 201, res.body);
    assert.match(json<'createApiKey'>(res).key, /^wum_/);
  });

  test('rotation: two keys work at once; revoking the old one leaves the new one working', async () => {
    const ws = await ctx.createWorkspace('rotate');
    const fresh = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`));
    assert.equal((await ctx.api(ws, 'GET', '/users')).statusCode, 200, 'old key');
    assert.equal((await ctx.api(withKey(ws, fresh.key), 'GET', '/users')).statusCode, 200, 'new key');

    const revoked = await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${ws.apiKeyId}`);
    assert.equal(revoked.statusCode, 204);
    assert.equal(revoked.body, '');
    assertProblem(await ctx.api(ws, 'GET', '/users'), 401, 'invalid_api_key');
    assertProblem(await ctx.api(ws, 'POST', '/users', { body: userBody('x@example.com') }), 401, 'invalid_api_key');
    assert.equal((await ctx.api(withKey(ws, fresh.key), 'GET', '/users')).statusCode, 200, 'new key still works');
    const stored = await ctx.api(withKey(ws, fresh.key), 'GET', '/users/x@example.com');
    assertProblem(stored, 404, 'user_not_found');
  });

  test('GET …/api-keys lists every key, oldest first, with public fields only and never the plaintext', async () => {
    const ws = await ctx.createWorkspace('list');
    const second = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`));
    const third = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`));
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${second.id}`)).statusCode, 204);

    const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`);
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /^application\/json/);
    for (const plaintext of [ws.apiKey, second.key, third.key]) {
      assert.ok(!res.body.includes(plaintext), 'no plaintext key anywhere in the body');
      assert.ok(!res.body.includes(plaintext.slice(4)), 'not even without its prefix');
    }
    const keys: ListedKey[] = json<'listApiKeys'>(res).api_keys;
    assert.deepEqual(keys.map((k) => k.id), [ws.apiKeyId, second.id, third.id]);
    for (const key of keys) {
      assert.deepEqual(Object.keys(key).sort(), [
        'created_at', 'created_by', 'expires_at', 'id', 'last_used_at', 'name', 'prefix', 'revoked_at', 'scopes',
      ]);
      assert.ok(!('key' in key));
      assert.match(key.created_at, TIMESTAMP);
    }
    assert.equal(keys[1]!.prefix, second.prefix);
    assert.equal(keys[1]!.created_at, second.created_at);
    assert.match(keys[1]!.revoked_at as string, TIMESTAMP);
    assert.equal(keys[0]!.revoked_at, null);
    assert.equal(keys[2]!.revoked_at, null);
    assert.equal(keys[2]!.last_used_at, null, 'a key never used has no last use');
  });

  test('using a key records its last use', async () => {
    const ws = await ctx.createWorkspace('used');
    assert.equal((await listKeys(ws))[0]!.last_used_at, null);
    assert.equal((await ctx.api(ws, 'GET', '/users')).statusCode, 200);
    // The use is recorded off the request path; give it a moment to land.
    let lastUsed: string | null = null;
    for (let i = 0; i < 100 && lastUsed === null; i += 1) {
      lastUsed = (await listKeys(ws))[0]!.last_used_at;
      if (lastUsed === null) await sleep(50);
    }
    assert.match(lastUsed ?? '', TIMESTAMP);
  });

  test('revoking is idempotent: a second DELETE → 204 and keeps the first revocation time', async () => {
    const ws = await ctx.createWorkspace('twice');
    const spare = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`));
    const path = `/workspaces/${ws.subdomain}/api-keys/${ws.apiKeyId}`;
    assert.equal((await ctx.admin('DELETE', path)).statusCode, 204);
    const first = (await listKeys(ws)).find((k) => k.id === ws.apiKeyId)!.revoked_at;
    assert.match(first as string, TIMESTAMP);
    const again = await ctx.admin('DELETE', path);
    assert.equal(again.statusCode, 204);
    assert.equal(again.body, '');
    assert.equal((await listKeys(ws)).find((k) => k.id === ws.apiKeyId)!.revoked_at, first);
    assertProblem(await ctx.api(ws, 'GET', '/users'), 401, 'invalid_api_key');
    assert.equal((await ctx.api(withKey(ws, spare.key), 'GET', '/users')).statusCode, 200);
  });

  test('an unknown key id → 404 api_key_not_found (random UUID, non-UUID string); nothing revoked', async () => {
    const ws = await ctx.createWorkspace('unknown');
    for (const id of [randomUUID(), 'not-a-uuid', '123', `${ws.apiKeyId}0`, ws.apiKey]) {
      const res = await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${encodeURIComponent(id)}`);
      assertProblem(res, 404, 'api_key_not_found');
    }
    assert.equal((await ctx.api(ws, 'GET', '/users')).statusCode, 200);
    assert.equal((await listKeys(ws))[0]!.revoked_at, null);
  });

  test("another workspace's key id → 404 api_key_not_found, and that key keeps working", async () => {
    const a = await ctx.createWorkspace('tenant-a');
    const b = await ctx.createWorkspace('tenant-b');
    assertProblem(await ctx.admin('DELETE', `/workspaces/${a.subdomain}/api-keys/${b.apiKeyId}`), 404, 'api_key_not_found');
    assert.equal((await ctx.api(b, 'GET', '/users')).statusCode, 200);
    assert.equal((await ctx.api(a, 'GET', '/users')).statusCode, 200);
    assert.equal((await listKeys(b))[0]!.revoked_at, null);
    assert.deepEqual((await listKeys(a)).map((k) => k.id), [a.apiKeyId], "b's key is not listed under a");
  });

  test('an unknown workspace → 404 workspace_not_found on create, list and revoke', async () => {
    const sub = `nowhere-${process.pid}`;
    assertProblem(await ctx.admin('POST', `/workspaces/${sub}/api-keys`), 404, 'workspace_not_found');
    assertProblem(await ctx.admin('GET', `/workspaces/${sub}/api-keys`), 404, 'workspace_not_found');
    assertProblem(await ctx.admin('DELETE', `/workspaces/${sub}/api-keys/${randomUUID()}`), 404, 'workspace_not_found');
  });

  test('keys of a deleted workspace are gone with it', async () => {
    const ws = await ctx.createWorkspace('dropped');
    const extra = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`));
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}`)).statusCode, 204);
    assertProblem(await ctx.api(withKey(ws, extra.key), 'GET', '/users'), 404, 'workspace_not_found');
    assertProblem(await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${extra.id}`), 404, 'workspace_not_found');
  });

  test('the API-key routes require the admin token', async () => {
    const ws = await ctx.createWorkspace('auth');
    for (const [method, path] of [
      ['POST', `/workspaces/${ws.subdomain}/api-keys`],
      ['GET', `/workspaces/${ws.subdomain}/api-keys`],
      ['DELETE', `/workspaces/${ws.subdomain}/api-keys/${ws.apiKeyId}`],
    ] as const) {
      const res = await ctx.app.inject({ method, url: `/admin/v1${path}`, headers: { 'x-api-key': ws.apiKey } });
      assertProblem(res, 401, 'invalid_admin_token');
    }
    assert.equal((await ctx.api(ws, 'GET', '/users')).statusCode, 200, 'the key was not revoked');
    assert.equal((await listKeys(ws)).length, 1, 'no key was created');
  });
});
