// one backend: postgres: replicas share one PostgreSQL (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { freePort } from '../../harness/free-port.ts';
import { SERVER_ARGS, sendRequest, spawnServer, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { json, userData } from '../helpers/json.ts';

/*
 * The scheduler of access that ends on time across processes (docs/contract.md Part B, "Access
 * that ends on time"): two server processes on one PostgreSQL deactivate a workspace's expiring
 * users exactly once between them; a process killed with SIGKILL in the middle of a sweep leaves
 * nothing skipped and nothing done twice once another process has swept. PostgreSQL only: PGlite
 * serves one process. Every wait is bounded; every process is stopped in `after`.
 */

const ADMIN_TOKEN = 'lifecycle-admin-token-0123456789';
const API = '/api/external/v2';
const TEST_TIMEOUT = { timeout: 240_000 };

if (BACKEND === 'postgres') {
  describe(`access that ends on time across processes [${BACKEND}]`, () => {
    let database: PostgresDatabase;
    const servers: ServerProcess[] = [];
    let counter = 0;

    async function start(): Promise<number> {
      const port = await freePort();
      const server = spawnServer(process.execPath, SERVER_ARGS, {
        DATABASE_URL: database.url,
        DATABASE_POOL_SIZE: '5',
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        SEED_DEMO: 'false',
        RATE_LIMIT_PER_KEY: '0',
        PORT: String(port),
      });
      servers.push(server);
      const deadline = Date.now() + 90_000;
      while (!(await sendRequest(port, 'GET', '/readyz', { timeoutMs: 1000 }).then((r) => r.status === 200, () => false))) {
        if (Date.now() > deadline || server.child.exitCode !== null) throw new Error(`server did not start:\n${server.stdout().slice(-2000)}\n${server.stderr().slice(-2000)}`);
        await sleep(200);
      }
      return port;
    }

    /**
     * A workspace with an owner and 40 users who never expire, and `count` users who all expire
     * at `at`. The due time is planned from the 40 timed adds: two and a half times as long as
     * adding the rest takes at that pace (at least 5 s), so the users are in before they are
     * due on a slow machine too, and a fast one does not wait for nothing.
     */
    async function workspace(port: number, count: number) {
      counter += 1;
      const subdomain = `expiring${counter}`;
      const created = await sendRequest(port, 'POST', '/admin/v1/workspaces', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: { subdomain } });
      assert.equal(created.status, 201, created.body);
      const key = json<'createWorkspace'>(created).api_key.key as string;
      const call = (p: number, method: string, path: string, body?: unknown) =>
        sendRequest(p, method, `${API}${path}`, { host: `${subdomain}.localhost`, headers: { 'x-api-key': key }, body, timeoutMs: 30_000 });
      assert.equal((await call(port, 'POST', '/users', { user: { email: 'owner@example.com', role: 'owner', apps: [] } })).status, 201);
      /** Adds `n` users named `prefix<i>` with 8 requests in flight. */
      const add = async (prefix: string, n: number, expiresAt?: Date) => {
        let next = 0;
        const writer = async () => {
          while (next < n) {
            const i = next++;
            const user = { email: `${prefix}${i}@example.com`, role: 'non_owner', apps: [], ...(expiresAt ? { expires_at: expiresAt.toISOString() } : {}) };
            const res = await call(port, 'POST', '/users', { user });
            assert.equal(res.status, 201, res.body);
          }
        };
        await Promise.all(Array.from({ length: 8 }, writer));
      };
      const started = Date.now();
      await add('steady', 40);
      const at = new Date(Date.now() + Math.max(5_000, (2.5 * count * (Date.now() - started)) / 40));
      await add('u', count, at);
      assert.ok(Date.now() < at.getTime(), 'the users were added before they were due');
      return { subdomain, call, at };
    }

    /** Deactivated users of the workspace, by the listing's total. */
    async function deactivated(ws: Awaited<ReturnType<typeof workspace>>, port: number): Promise<number> {
      const res = await ws.call(port, 'GET', '/users?status=deactivated&page_size=1');
      assert.equal(res.status, 200, res.body);
      return json<'listUsers'>(res).total_count as number;
    }

    /** Every event of the workspace's feed. */
    async function events(ws: Awaited<ReturnType<typeof workspace>>, port: number) {
      const all: Array<{ type: string; data: { user: { email: string }; reason?: string } }> = [];
      let afterSequence = 0;
      for (;;) {
        const res = await ws.call(port, 'GET', `/events?after=${afterSequence}&limit=1000`);
        assert.equal(res.status, 200, res.body);
        const page = json<'listEvents'>(res);
        all.push(...page.events.map((e) => ({ type: e.type, data: userData(e) })));
        if (page.events.length === 0) return all;
        afterSequence = page.next_after;
      }
    }

    /** Each expiring user deactivated by exactly one event and one audit row, with reason `expired`. */
    async function assertExactlyOnce(ws: Awaited<ReturnType<typeof workspace>>, port: number, count: number) {
      const ended = (await events(ws, port)).filter((e) => e.type === 'user.deactivated');
      assert.equal(ended.length, count);
      assert.equal(new Set(ended.map((e) => e.data.user.email)).size, count);
      assert.ok(ended.every((e) => e.data.reason === 'expired'));
      const audit = await sendRequest(port, 'GET', `/admin/v1/workspaces/${ws.subdomain}/audit-events?actor_type=policy&page_size=1`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(json<'listWorkspaceAuditEvents'>(audit).total_count, count);
    }

    before(async () => {
      database = await createPostgresDatabase('wum_lifecycle');
    });
    after(async () => {
      for (const server of servers) server.kill();
      await database?.drop();
    });

    test('two processes on one PostgreSQL deactivate 600 expiring users exactly once between them, within 5 s of the due time', TEST_TIMEOUT, async () => {
      const [a, b] = [await start(), await start()];
      const count = 600;
      const ws = await workspace(a, count);
      const deadline = ws.at.getTime() + 5_000 + 10_000;
      while ((await deactivated(ws, b)) < count) {
        assert.ok(Date.now() < deadline, 'every due user is deactivated soon after its due time');
        await sleep(250);
      }
      await sleep(6_000); // a further sweep of each process finds nothing more to do
      await assertExactlyOnce(ws, a, count);
      assert.equal(json<'User'>(await ws.call(b, 'GET', '/users/owner@example.com')).status, 'active');
    });

    test('a process killed with SIGKILL mid-sweep: another finishes the sweep, nothing skipped, nothing twice', TEST_TIMEOUT, async () => {
      for (const server of servers.splice(0)) server.kill();
      const first = await start();
      // Fifteen batches of 100: the sweep is seen to have begun (polled every 20 ms) long before
      // it could have ended.
      const count = 1500;
      const ws = await workspace(first, count);
      let done: number;
      const deadline = ws.at.getTime() + 30_000;
      while ((done = await deactivated(ws, first)) === 0) {
        assert.ok(Date.now() < deadline, 'the sweep started');
        await sleep(20);
      }
      servers[0]!.kill();
      const second = await start();
      while ((await deactivated(ws, second)) < count) {
        assert.ok(Date.now() < deadline + 60_000, 'the second process finished the sweep');
        await sleep(250);
      }
      await assertExactlyOnce(ws, second, count);
      assert.ok(done < count, `killed mid-sweep (${done} of ${count} done then)`);
    });
  });
}
