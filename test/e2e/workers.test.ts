import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { freePort } from '../../harness/free-port.ts';
import { SERVER_ARGS, sendRequest, spawnServer, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * WORKERS=N (docs/performance.md): the real server process with node:cluster workers sharing one port.
 * Every wait is bounded; every spawned process group is killed in `after`.
 */

const ADMIN_TOKEN = 'workers-admin-token-0123456789';
const API = '/api/external/v2';
const START_TIMEOUT_MS = 60_000;
const EXIT_TIMEOUT_MS = 25_000;
const TEST_TIMEOUT = { timeout: 150_000 };

/** The pid of each answered request's log line (pino's `pid` on "request completed"), in order. */
function requestLinePids(stdout: string): number[] {
  return [...stdout.matchAll(/"pid":(\d+).*"msg":"request completed"/g)].map((match) => Number(match[1]));
}

/** The pids that logged an answered request. */
function answeringPids(stdout: string): Set<number> {
  return new Set(requestLinePids(stdout));
}

/** Waits, at most 5 s, until `server` has logged `count` answered requests (a worker logs each just after answering it). */
async function waitForRequestLines(server: ServerProcess, count: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (requestLinePids(server.stdout()).length < count) {
    assert.ok(Date.now() < deadline, `${count} request lines logged, not ${requestLinePids(server.stdout()).length}`);
    await sleep(20);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe(`WORKERS [${BACKEND}]`, () => {
  const spawned: ServerProcess[] = [];
  const cleanups: Array<() => Promise<void> | void> = [];
  after(async () => {
    for (const server of spawned) server.kill();
    for (const cleanup of cleanups) await cleanup();
  });

  test('WORKERS=2 with the embedded PGlite: exits non-zero naming WORKERS, without touching DATA_DIR', TEST_TIMEOUT, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wum-workers-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const dataDir = join(dir, 'data');
    const server = spawnServer(process.execPath, SERVER_ARGS, { WORKERS: '2', DATA_DIR: dataDir, PORT: String(await freePort()) });
    spawned.push(server);
    const status = await server.waitForExit(START_TIMEOUT_MS);
    assert.equal(typeof status, 'number', 'exits with a status, not killed by a signal');
    assert.notEqual(status, 0);
    assert.match(server.stderr(), /\bWORKERS\b/);
    assert.doesNotMatch(server.stderr(), /^\s+at /m, 'no stack trace');
    assert.equal(existsSync(dataDir), false, 'touches no storage');
  });

  if (BACKEND === 'postgres') {
    test('WORKERS=2 over PostgreSQL: two processes answer on one port; a revoked key is refused by both; SIGTERM to the primary stops all with 0', TEST_TIMEOUT, async () => {
      const database: PostgresDatabase = await createPostgresDatabase('wum_workers');
      cleanups.push(() => database.drop());
      const port = await freePort();
      const server = spawnServer(process.execPath, SERVER_ARGS, {
        WORKERS: '2',
        DATABASE_URL: database.url,
        PORT: String(port),
        ADMIN_TOKEN,
        LOG_LEVEL: 'info',
        RATE_LIMIT_PER_KEY: '0',
        // Long enough that only the relayed invalidation, not expiry, can explain a refusal.
        CACHE_TTL_MS: '600000',
      });
      spawned.push(server);
      await server.waitForOutput(/Server listening[\s\S]*Server listening/, START_TIMEOUT_MS);

      const admin = (method: string, path: string, body?: unknown) =>
        sendRequest(port, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });
      const created = await admin('POST', '/workspaces', { subdomain: 'multi' });
      assert.equal(created.status, 201, created.body);
      const { key, id: keyId } = json<'createWorkspace'>(created).api_key as { key: string; id: string };
      const host = `multi.localhost:${port}`;
      const api = (method: string, path: string, body?: unknown) =>
        sendRequest(port, method, `${API}${path}`, { host, headers: { 'x-api-key': key }, body });

      const added = await api('POST', '/users', { user: { email: 'ada@example.com', role: 'owner', apps: [] } });
      assert.equal(added.status, 201, added.body);
      // Concurrent requests use separate connections, which the primary hands to whichever worker
      // is free. A worker writes a request's log line just after its response, so each round waits
      // for the lines of every request so far before reading who answered; a round whose
      // connections all went to one worker is followed by another, five at most.
      let logged = 2; // the workspace and the user
      let workers = new Set<number>();
      for (let round = 0; round < 5 && workers.size < 2; round += 1) {
        const listings = await Promise.all(Array.from({ length: 20 }, () => api('GET', '/users')));
        for (const listing of listings) {
          assert.equal(listing.status, 200, listing.body);
          assert.deepEqual(json<'listUsers'>(listing).users.map((u: { email: string }) => u.email), ['ada@example.com']);
        }
        logged += listings.length;
        await waitForRequestLines(server, logged);
        workers = answeringPids(server.stdout());
      }
      assert.equal(workers.size, 2, `requests answered by two worker processes: ${[...workers].join(', ')}`);
      assert.ok(!workers.has(server.child.pid!), 'the primary answers nothing itself');

      // Both workers now hold the key in their read cache; the revocation goes to one of them.
      assert.equal((await admin('DELETE', `/workspaces/multi/api-keys/${keyId}`)).status, 204);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const refused = await Promise.all(Array.from({ length: 20 }, () => api('GET', '/users')));
      assert.deepEqual([...new Set(refused.map((r) => r.status))], [401], 'every worker refuses the revoked key');

      process.kill(server.child.pid!, 'SIGTERM');
      assert.equal(await server.waitForExit(EXIT_TIMEOUT_MS), 0, `exit status after SIGTERM${server.stderr()}`);
      for (const pid of workers) assert.equal(alive(pid), false, `worker ${pid} stopped`);
    });
  }
});
