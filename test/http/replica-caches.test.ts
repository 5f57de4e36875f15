// one backend: postgres: replicas share one PostgreSQL (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { startService, type Service } from '../../src/server/service.ts';
import { LISTENER_APPLICATION_NAME } from '../../src/storage/database.ts';
import { createPostgresDatabase, withClient, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { ADMIN_TOKEN, API, BACKEND, testConfig } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Several replicas on one PostgreSQL (docs/contract.md Part B, "Running several replicas"): a key
 * revoked, a workspace deleted or the catalogue changed through one replica takes effect on
 * every other within 1 s, through LISTEN/NOTIFY, not after CACHE_TTL_MS. Each "replica" here is
 * what server.ts runs (`startService`): its own pool, store, read cache and listening
 * connection, with a cache TTL of 10 minutes, so that only a notification can explain a refusal.
 * PGlite serves one process, so this applies to PostgreSQL only.
 */

const LONG_TTL = { CACHE_TTL_MS: '600000', RATE_LIMIT_PER_KEY: '0' };
/** The contract's bound (docs/contract.md Part B). */
const WITHIN_MS = 1000;

/** Polls `check` every 20 ms until it is true; resolves with the ms it took, or rejects after `limitMs`. */
async function within(limitMs: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return performance.now() - started;
    if (performance.now() - started > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
    await sleep(20);
  }
}

/** The value of an unlabelled metric in `/metrics` text. */
function metric(text: string, name: string): number {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

if (BACKEND === 'postgres') {
  describe(`replicas share cache invalidations through LISTEN/NOTIFY [${BACKEND}]`, () => {
    let database: PostgresDatabase;
    let a: Service;
    let b: Service;
    /** Closed while b's listener must not reconnect. */
    let gate: Promise<void> = Promise.resolve();
    let openGate: () => void = () => {};
    let counter = 0;

    const admin = (replica: Service, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown) =>
      replica.app.inject({
        method,
        url: `/admin/v1${path}`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        ...(body === undefined ? {} : { payload: body as object }),
      });
    const api = (replica: Service, subdomain: string, key: string, path = '/users') =>
      replica.app.inject({ method: 'GET', url: `${API}${path}`, headers: { host: `${subdomain}.localhost`, 'x-api-key': key } });
    const metrics = async (replica: Service) => (await replica.app.inject({ method: 'GET', url: '/metrics' })).body;

    /** A workspace created through `a`, with its key verified (and cached) by `a` and `b`. */
    async function cachedWorkspace(): Promise<{ subdomain: string; key: string; keyId: string }> {
      counter += 1;
      const subdomain = `replica-${process.pid}-${counter}`;
      const created = await admin(a, 'POST', '/workspaces', { subdomain });
      assert.equal(created.statusCode, 201, created.body);
      const { key, id: keyId } = json<'createWorkspace'>(created).api_key as { key: string; id: string };
      for (const replica of [a, b]) assert.equal((await api(replica, subdomain, key)).statusCode, 200);
      return { subdomain, key, keyId };
    }

    async function terminateListeners(): Promise<number> {
      return withClient(database.url, async (client) => {
        const { rowCount } = await client.query(
          'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = current_database()',
          [LISTENER_APPLICATION_NAME],
        );
        return rowCount ?? 0;
      });
    }

    before(async () => {
      database = await createPostgresDatabase('wum_replicas', { migrated: true });
      const config = testConfig({ ...LONG_TTL, DATABASE_URL: database.url, DATABASE_POOL_SIZE: '5' });
      a = await startService(config, { logger: false });
      const connectB = a.database.connectListener!;
      b = await startService(config, {
        logger: false,
        listener: {
          connect: async (): Promise<pg.Client> => {
            await gate;
            return connectB();
          },
          minDelayMs: 20,
          maxDelayMs: 200,
        },
      });
      await within(10_000, 'both listeners connected', async () => a.listener!.connected && b.listener!.connected);
    });
    after(async () => {
      openGate();
      await a?.close();
      await b?.close();
      await database?.drop();
    });

    test('a key revoked through one replica is refused by the other within 1 s', async () => {
      const ws = await cachedWorkspace();
      const before = metric(await metrics(b), 'cache_listener_notifications_total');
      assert.equal((await admin(a, 'DELETE', `/workspaces/${ws.subdomain}/api-keys/${ws.keyId}`)).statusCode, 204);
      const took = await within(WITHIN_MS, 'revoked key refused by the other replica', async () => {
        const res = await api(b, ws.subdomain, ws.key);
        return res.statusCode === 401 && json<'Problem'>(res).code === 'invalid_api_key';
      });
      assert.ok(took < WITHIN_MS, `took ${took} ms`);
      assert.ok(metric(await metrics(b), 'cache_listener_notifications_total') > before, 'the notification is counted');
    });

    test('a workspace deleted through one replica is unknown to the other within 1 s', async () => {
      const ws = await cachedWorkspace();
      assert.equal((await admin(a, 'DELETE', `/workspaces/${ws.subdomain}`)).statusCode, 204);
      await within(WITHIN_MS, 'deleted workspace unknown to the other replica', async () => {
        const res = await api(b, ws.subdomain, ws.key);
        return res.statusCode === 404 && json<'Problem'>(res).code === 'workspace_not_found';
      });
    });

    test('a catalogue change through one replica is listed by the other within 1 s, both ways', async () => {
      const ws = await cachedWorkspace();
      const names = async (replica: Service) =>
        (json<'listProducts'>(await api(replica, ws.subdomain, ws.key, '/products')).products as Array<{ name: string }>).map((p) => p.name);
      const product = `ledger${counter}`;
      assert.ok(!(await names(b)).includes(product), 'b has cached a catalogue without it');
      assert.equal((await admin(a, 'PUT', `/products/${product}`, { roles: ['clerk'] })).statusCode, 201);
      await within(WITHIN_MS, 'new product listed by b', async () => (await names(b)).includes(product));
      assert.ok((await names(a)).includes(product));
      assert.equal((await admin(b, 'DELETE', `/products/${product}`)).statusCode, 204);
      await within(WITHIN_MS, 'removed product gone from a', async () => !(await names(a)).includes(product));
    });

    test('a refused change notifies nobody: the other replica keeps its cache', async () => {
      const ws = await cachedWorkspace();
      const before = metric(await metrics(b), 'cache_listener_notifications_total');
      assert.equal((await admin(a, 'DELETE', '/products/no-such-product')).statusCode, 404);
      assert.equal((await api(b, ws.subdomain, ws.key)).statusCode, 200);
      await sleep(200);
      assert.equal(metric(await metrics(b), 'cache_listener_notifications_total'), before);
    });

    test('the listening connection killed (pg_terminate_backend): it reconnects, and revocations reach it again', async () => {
      const connects = metric(await metrics(b), 'cache_listener_connects_total');
      assert.equal(metric(await metrics(b), 'cache_listener_connected'), 1);
      assert.ok((await terminateListeners()) >= 2, 'both replicas listen on their own connection');
      await within(10_000, 'b reconnected', async () => metric(await metrics(b), 'cache_listener_connects_total') > connects);
      assert.equal(metric(await metrics(b), 'cache_listener_connected'), 1);
      await within(10_000, 'a reconnected', async () => a.listener!.connected);

      const ws = await cachedWorkspace();
      assert.equal((await admin(a, 'DELETE', `/workspaces/${ws.subdomain}/api-keys/${ws.keyId}`)).statusCode, 204);
      await within(WITHIN_MS, 'revoked key refused after the reconnection', async () => (await api(b, ws.subdomain, ws.key)).statusCode === 401);
    });

    test('while the listener is disconnected nothing is served from the cache: a revocation made meanwhile applies at once, and after it reconnects', async () => {
      const ws = await cachedWorkspace();
      gate = new Promise((resolve) => (openGate = resolve));
      await terminateListeners();
      await within(10_000, 'b noticed the loss', async () => metric(await metrics(b), 'cache_listener_connected') === 0);
      assert.equal((await admin(a, 'DELETE', `/workspaces/${ws.subdomain}/api-keys/${ws.keyId}`)).statusCode, 204);
      await sleep(300);
      // The notification went nowhere, but b, not listening, trusts no cached key (as during a database failover).
      assert.equal((await api(b, ws.subdomain, ws.key)).statusCode, 401, 'read afresh while the listener is down');
      openGate();
      await within(10_000, 'b reconnected', async () => b.listener!.connected);
      assert.equal((await api(b, ws.subdomain, ws.key)).statusCode, 401, 'refused once the listener is back');
    });
  });
}
