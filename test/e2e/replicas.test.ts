// one backend: postgres: replicas share one PostgreSQL (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { startHaproxy, type Haproxy } from '../../harness/haproxy.ts';
import { createPostgresDatabase, withClient, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { freePort } from '../../harness/free-port.ts';
import { startRedisServer, type RedisServer } from '../../harness/redis-server.ts';
import { SERVER_ARGS, sendRequest, spawnServer, type HttpResponse, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Three server processes on one PostgreSQL, behind a real HAProxy on loopback, sharing their
 * rate limits through a real Redis: the setup of docs/operations.md ("Three replicas behind
 * HAProxy"). docs/contract.md Part B, "Running several replicas": a revocation reaches every replica
 * within 1 s; the per-key limit holds for the cluster; a replica killed under write load loses
 * no acknowledged write (each 201 is stored, with its audit row). PostgreSQL only: PGlite
 * serves one process. Every wait is bounded; every process is stopped in `after`.
 */

const ADMIN_TOKEN = 'replicas-admin-token-0123456789';
const API = '/api/external/v2';
const START_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT = { timeout: 180_000 };
/** The per-key limit of every replica: 20 a second, burst 40 (shared through Redis). */
const PER_SECOND = 20;
const BURST = 40;
/** Concurrent writers, each with keys of its own that it takes in turn (so the per-key limit leaves them room). */
const WRITERS = 6;
const KEYS_PER_WRITER = 4;
const WRITE_LOAD_MS = 6000;
const KILL_AFTER_MS = 2000;
/**
 * HAProxy checks every 500 ms and needs 2 failures: the dead replica is out within ~1.5 s;
 * failures after the kill are bounded by this (generous on a busy machine).
 */
const DETECTION_MS = 5000;

interface Replica {
  readonly name: string;
  readonly port: number;
  readonly process: ServerProcess;
}

if (BACKEND === 'postgres') {
  describe(`three replicas behind HAProxy, one PostgreSQL, one Redis [${BACKEND}]`, () => {
    let database: PostgresDatabase;
    let redis: RedisServer;
    let haproxy: Haproxy;
    const replicas: Replica[] = [];
    let counter = 0;

    const viaBalancer = (method: string, path: string, options: { host?: string; headers?: Record<string, string>; body?: unknown } = {}) =>
      sendRequest(haproxy.port, method, path, { timeoutMs: 15_000, ...options });
    const admin = (method: string, path: string, body?: unknown) =>
      viaBalancer(method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });

    async function workspace(): Promise<{ subdomain: string; key: string; keyId: string }> {
      counter += 1;
      const subdomain = `cluster${counter}`;
      const created = await admin('POST', '/workspaces', { subdomain });
      assert.equal(created.status, 201, created.body);
      const { key, id } = json<'createWorkspace'>(created).api_key as { key: string; id: string };
      return { subdomain, key, keyId: id };
    }

    async function newKey(subdomain: string): Promise<string> {
      const created = await admin('POST', `/workspaces/${subdomain}/api-keys`);
      assert.equal(created.status, 201, created.body);
      return json<'createApiKey'>(created).key as string;
    }

    before(async () => {
      database = await createPostgresDatabase('wum_cluster');
      redis = await startRedisServer();
      const env = {
        DATABASE_URL: database.url,
        DATABASE_POOL_SIZE: '5',
        ADMIN_TOKEN,
        LOG_LEVEL: 'warn',
        SEED_DEMO: 'false',
        // Long enough that only a notification, not expiry, can explain a refusal.
        CACHE_TTL_MS: '600000',
        RATE_LIMIT_PER_KEY: String(PER_SECOND),
        RATE_LIMIT_BURST: String(BURST),
        REDIS_URL: redis.url,
        TRUST_PROXY: 'true',
      };
      for (const name of ['r1', 'r2', 'r3']) {
        const port = await freePort();
        replicas.push({ name, port, process: spawnServer(process.execPath, SERVER_ARGS, { ...env, PORT: String(port) }) });
      }
      // All three start at once: one migrates, the others wait on the advisory lock.
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (const replica of replicas) {
        for (;;) {
          const ready = await sendRequest(replica.port, 'GET', '/readyz', { timeoutMs: 1000 }).then((r) => r.status === 200, () => false);
          if (ready) break;
          if (Date.now() > deadline || replica.process.child.exitCode !== null) {
            throw new Error(`${replica.name} did not start:\n${replica.process.stdout().slice(-2000)}\n${replica.process.stderr().slice(-2000)}`);
          }
          await sleep(200);
        }
      }
      haproxy = await startHaproxy({ port: await freePort(), servers: replicas, checkIntervalMs: 500 });
    });

    after(async () => {
      await haproxy?.stop();
      for (const replica of replicas) replica.process.kill();
      await redis?.stop();
      await database?.drop();
    });

    test('a key revoked through the balancer is refused by every replica within 1 s', TEST_TIMEOUT, async (t) => {
      const ws = await workspace();
      const host = `${ws.subdomain}.localhost`;
      const direct = (replica: Replica) => sendRequest(replica.port, 'GET', `${API}/users`, { host, headers: { 'x-api-key': ws.key } });
      for (const replica of replicas) assert.equal((await direct(replica)).status, 200, `${replica.name} verified (and cached) the key`);

      assert.equal((await admin('DELETE', `/workspaces/${ws.subdomain}/api-keys/${ws.keyId}`)).status, 204);
      const revokedAt = performance.now();
      const delays = await Promise.all(
        replicas.map(async (replica) => {
          for (;;) {
            const res = await direct(replica);
            if (res.status === 401) return performance.now() - revokedAt;
            assert.equal(res.status, 200, res.body);
            if (performance.now() - revokedAt > 1000) return Number.POSITIVE_INFINITY;
            await sleep(20);
          }
        }),
      );
      t.diagnostic(`refused after ${delays.map((d) => `${d.toFixed(0)} ms`).join(', ')}`);
      for (const [i, delay] of delays.entries()) assert.ok(delay < 1000, `${replicas[i]!.name} refused the revoked key after ${delay.toFixed(0)} ms`);
    });

    test('the per-key limit holds for the cluster, not per replica', TEST_TIMEOUT, async (t) => {
      const ws = await workspace();
      const host = `${ws.subdomain}.localhost`;
      const requests = 150;
      const started = performance.now();
      const statuses: number[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 10 }, async () => {
          while (next < requests) {
            next += 1;
            statuses.push((await viaBalancer('GET', `${API}/products`, { host, headers: { 'x-api-key': ws.key } })).status);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const allowed = statuses.filter((s) => s === 200).length;
      const limited = statuses.filter((s) => s === 429).length;
      assert.equal(allowed + limited, requests, `only 200 and 429: ${[...new Set(statuses)].join(', ')}`);
      t.diagnostic(`${allowed} allowed, ${limited} limited in ${seconds.toFixed(2)} s`);
      // One bucket: the burst plus what refilled meanwhile (one replica alone would allow as much; three, three times).
      const bound = BURST + Math.ceil(PER_SECOND * seconds) + 1;
      assert.ok(allowed <= bound, `${allowed} allowed in ${seconds.toFixed(2)} s; one shared bucket allows at most ${bound}`);
      assert.ok(allowed >= BURST, `the burst of ${BURST} was served (${allowed})`);
      for (const replica of replicas) {
        const metrics = (await sendRequest(replica.port, 'GET', '/metrics')).body;
        assert.match(metrics, /http_requests_total\{[^}]*route="\/api\/external\/v2\/products"[^}]*\} [1-9]/, `${replica.name} served some of them`);
      }
    });

    test('a replica killed (SIGKILL) under write load: every acknowledged write is stored with its audit row', TEST_TIMEOUT, async (t) => {
      const ws = await workspace();
      const host = `${ws.subdomain}.localhost`;
      const keys = [ws.key];
      while (keys.length < WRITERS * KEYS_PER_WRITER) keys.push(await newKey(ws.subdomain));
      const acknowledged: string[] = [];
      const failures: Array<{ status: number; at: number; body: string }> = [];
      const started = performance.now();
      let killedAt = Number.POSITIVE_INFINITY;
      let sequence = 0;

      const writer = async (own: readonly string[]) => {
        while (performance.now() - started < WRITE_LOAD_MS) {
          sequence += 1;
          const key = own[sequence % own.length]!;
          const email = `load-${sequence}@example.com`;
          let res: HttpResponse;
          try {
            res = await viaBalancer('POST', `${API}/users`, {
              host,
              headers: { 'x-api-key': key },
              body: { user: { email, role: 'non_owner', apps: [] } },
            });
          } catch (error) {
            failures.push({ status: 0, at: performance.now(), body: (error as Error).message });
            continue;
          }
          if (res.status === 201) acknowledged.push(email);
          else if (res.status === 429) await sleep(Number(res.headers['retry-after'] ?? 1) * 1000);
          else failures.push({ status: res.status, at: performance.now(), body: res.body });
        }
      };
      const killer = (async () => {
        await sleep(KILL_AFTER_MS);
        replicas[1]!.process.kill();
        killedAt = performance.now();
      })();
      const writers = Array.from({ length: WRITERS }, (_, i) => writer(keys.slice(i * KEYS_PER_WRITER, (i + 1) * KEYS_PER_WRITER)));
      await Promise.all([...writers, killer]);

      t.diagnostic(`${acknowledged.length} writes acknowledged, ${failures.length} failed (${failures.map((f) => `${f.status} ${f.body.slice(0, 60)}`).join('; ')})`);
      assert.ok(acknowledged.length >= 50, `a real write load: ${acknowledged.length} users added`);
      // Only requests in flight on the killed replica, or sent before HAProxy marked it down, may fail; never with a 500.
      assert.ok(failures.length <= WRITERS * 2, `failed writes: ${JSON.stringify(failures.slice(0, 5))}`);
      for (const failure of failures) {
        assert.ok([0, 502, 503, 504].includes(failure.status), `only a lost connection fails: ${failure.status} ${failure.body}`);
        assert.ok(failure.at >= killedAt && failure.at <= killedAt + DETECTION_MS, 'failures only right after the kill');
      }

      const stored = await withClient(database.url, async (client) => {
        const { rows } = await client.query<{ email: string; audited: boolean }>(
          `select u.email,
                  exists (select 1 from audit_events a
                          where a.workspace_id = u.workspace_id and a.action = 'user.created' and a.user_id = u.public_id) as audited
             from users u join workspaces w on w.id = u.workspace_id
            where w.subdomain = $1`,
          [ws.subdomain],
        );
        return new Map(rows.map((r) => [r.email, r.audited]));
      });
      const lost = acknowledged.filter((email) => !stored.has(email));
      assert.deepEqual(lost, [], 'every 201 is in the database');
      const unaudited = acknowledged.filter((email) => stored.get(email) !== true);
      assert.deepEqual(unaudited, [], 'every stored user has its user.created audit row');

      // The survivors still serve, through the balancer, once the dead replica is out of rotation.
      const after = await viaBalancer('GET', `${API}/users?page_size=1`, { host, headers: { 'x-api-key': ws.key } });
      assert.equal(after.status, 200, after.body);
      assert.equal(json<'listUsers'>(after).total_count, stored.size);
    });
  });
}
