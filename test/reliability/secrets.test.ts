import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { secretsEqual } from '../../src/core/api-keys/api-key-secret.ts';
import { freePort } from '../../harness/free-port.ts';
import { listeningPid, sendRequest, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND, createTestContext, type TestContext } from '../helpers/test-context.ts';
import { LISTENING, START_TIMEOUT_MS, serverStorage, sleep, startServer, type ServerStorage } from './support.ts';
import { json } from '../helpers/json.ts';

/*
 * Keys and secrets (docs/security.md; OWASP API2, API8): keys are stored only as hashes, compared in
 * constant time, `last_used_at` costs at most one write a minute per key, and neither an API
 * key nor the admin token ever reaches the logs, even at the most verbose level.
 */

describe(`keys and secrets [${BACKEND}]`, () => {
  let ctx: TestContext;
  before(async () => {
    ctx = await createTestContext();
  });
  after(() => ctx.close());

  /** Every text value stored anywhere in the database, as one string. */
  async function everythingStored(): Promise<string> {
    const tables = ['workspaces', 'api_keys', 'products', 'users', 'user_apps', 'audit_events', 'idempotency_keys'];
    let all = '';
    for (const table of tables) {
      const result = (await ctx.database.db.execute(sql.raw(`select t::text as row from ${table} t`))) as unknown as {
        rows: Array<{ row: string }>;
      };
      all += result.rows.map((r) => r.row).join('\n');
    }
    return all;
  }

  test('API keys are stored only as SHA-256 hashes: the plaintext is nowhere in the database', async () => {
    const ws = await ctx.createWorkspace('hashes');
    const second = json<'createApiKey'>(await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`)).key as string;
    // Use both, so last_used_at, audit events and any cache had every chance to record them.
    assert.equal((await ctx.api(ws, 'GET', '/users')).statusCode, 200);
    assert.equal((await ctx.api(ws, 'GET', '/users', { headers: { 'x-api-key': second } })).statusCode, 200);
    const stored = await everythingStored();
    for (const key of [ws.apiKey, second]) {
      assert.ok(!stored.includes(key), 'no plaintext key');
      assert.ok(!stored.includes(key.slice(12)), 'not even its secret part');
      assert.ok(stored.includes(createHash('sha256').update(key).digest('hex')), 'its hash is what is kept');
    }
  });

  test('secrets are compared by value (constant-time comparison of their digests)', () => {
    assert.equal(secretsEqual('correct-horse-battery', 'correct-horse-battery'), true);
    assert.equal(secretsEqual('correct-horse-battery', 'correct-horse-batterY'), false);
    assert.equal(secretsEqual('correct-horse-battery', 'correct-horse'), false, 'a prefix is not enough');
    assert.equal(secretsEqual('', 'x'), false);
  });

  test('last_used_at is written once per key and minute, not on every request', async () => {
    const app = await ctx.buildApp();
    const ws = await ctx.createWorkspace('touch');
    const lastUsed = async () => {
      const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/api-keys`);
      assert.equal(res.statusCode, 200, res.body);
      return json<'listApiKeys'>(res).api_keys[0]!.last_used_at as string | null;
    };
    const call = () => app.inject({ url: '/api/external/v2/users', headers: { host: ws.host, 'x-api-key': ws.apiKey } });
    assert.equal((await call()).statusCode, 200);
    let first: string | null = null;
    for (let i = 0; i < 100 && first === null; i += 1) {
      first = await lastUsed();
      if (first === null) await sleep(20);
    }
    assert.ok(first, 'the first use is recorded');
    await sleep(20);
    for (let i = 0; i < 20; i += 1) assert.equal((await call()).statusCode, 200);
    await sleep(100);
    assert.equal(await lastUsed(), first, '20 more requests within the minute wrote nothing');
  });

  describe('the server process never logs a key or the admin token', () => {
    const ADMIN_TOKEN = 'logged-admin-token-0123456789-secret';
    const spawned: ServerProcess[] = [];
    let storage: ServerStorage | undefined;
    after(async () => {
      for (const server of spawned) server.kill();
      await storage?.remove();
    });

    test('at LOG_LEVEL=trace, through successes, refusals and errors', { timeout: 120_000 }, async () => {
      storage = await serverStorage('wum_logs');
      const port = await freePort();
      const server = startServer({ ...storage.env, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'trace' });
      spawned.push(server);
      await server.waitForOutput(LISTENING, START_TIMEOUT_MS);
      const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
      const created = await sendRequest(port, 'POST', '/admin/v1/workspaces', { headers: auth, body: { subdomain: 'logs' } });
      assert.equal(created.status, 201);
      const key: string = json<'createWorkspace'>(created).api_key.key;
      const host = `logs.localhost:${port}`;
      const wrongKey = `${key.slice(0, -4)}XXXX`;
      const wrongToken = `${ADMIN_TOKEN}-wrong`;
      const requests: Array<[string, string, Record<string, string>, unknown?]> = [
        ['GET', '/api/external/v2/users', { 'x-api-key': key }],
        ['POST', '/api/external/v2/users', { 'x-api-key': key }, { user: { email: 'a@example.com', role: 'owner', apps: [] } }],
        ['POST', '/api/external/v2/users', { 'x-api-key': key }, { user: { email: 'not-an-email' } }],
        ['GET', '/api/external/v2/users', { 'x-api-key': wrongKey }],
        ['GET', '/api/external/v2/users', { authorization: `Bearer ${key}` }],
        ['GET', '/admin/v1/workspaces', { authorization: `Bearer ${wrongToken}` }],
        ['GET', '/admin/v1/workspaces/logs/api-keys', auth],
        ['GET', `/nowhere?api_key=${'q'.repeat(8)}`, { 'x-api-key': key, ...auth }],
      ];
      for (const [method, path, headers, body] of requests) {
        await sendRequest(port, method, path, { host, headers, body });
      }
      process.kill(listeningPid(server.stdout())!, 'SIGTERM');
      assert.equal(await server.waitForExit(20_000), 0);
      const output = server.stdout() + server.stderr();
      assert.match(output, /incoming request/, 'requests were logged');
      for (const secret of [key, key.slice(12), wrongKey, ADMIN_TOKEN, wrongToken]) {
        assert.ok(!output.includes(secret), `a secret (${secret.slice(0, 6)}…) appears in the logs`);
      }
    });
  });
});
