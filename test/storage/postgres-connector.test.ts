// one backend: postgres: PostgreSQL's connector (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app.ts';
import { openDatabase, type OpenDatabase } from '../../src/storage/database.ts';
import { storageDependencies } from '../../src/server/app-dependencies.ts';
import { createStore } from '../../src/storage/store.ts';
import { assertProblem } from '../reliability/support.ts';
import {
  createPostgresDatabase,
  startPostgresCluster,
  withClient,
  type PostgresCluster,
  type PostgresDatabase,
} from '../../harness/postgres-cluster.ts';
import { freePort } from '../../harness/free-port.ts';
import { ADMIN_TOKEN, API, BACKEND, testConfig, testKeyRing, userBody } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * The connector (src/storage/postgres-connector.ts) on real servers, without a failover
 * manager: a multi-host DATABASE_URL whose hosts are a closed port, a read-only server (as a
 * standby is) and a writable one; a primary lost and none promoted yet; and a primary whose
 * commits wait for a synchronous standby that is gone. docs/contract.md Part B, "A highly available
 * database": wum writes only to the primary, answers 503 database_unavailable (never a hang,
 * never a 500) while there is none, and a retry with the Idempotency-Key gets the stored
 * answer when the first attempt did commit. PostgreSQL only.
 */

/** Longest time any answer below may take: the limits are 1–1.5 s; the rest is a busy machine. */
const PROMPT_MS = 6000;

interface Served {
  readonly app: FastifyInstance;
  readonly database: OpenDatabase;
  readonly host: string;
  readonly key: string;
}

async function serve(url: string, limits: { statementTimeoutMs: number; queryTimeoutMs: number; connectTimeoutMs: number }): Promise<Served> {
  const database = await openDatabase({ kind: 'postgres', url, poolSize: 3, ...limits });
  const app = await buildApp(testConfig(), {
    ...storageDependencies(testConfig(), database, createStore(database.db, { cacheTtlMs: 0, keyRing: testKeyRing() })),
    logger: false,
  });
  const admin = (method: 'POST' | 'PUT', url: string, payload: object) =>
    app.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload });
  assert.ok((await admin('PUT', '/products/crm', { roles: ['admin', 'member'] })).statusCode < 300);
  const created = await admin('POST', '/workspaces', { subdomain: 'conn' });
  assert.equal(created.statusCode, 201, created.body);
  return { app, database, host: 'conn.localhost', key: json<'createWorkspace'>(created).api_key.key };
}

function call(served: Served, method: 'GET' | 'POST', path: string, options: { body?: object; key?: string } = {}) {
  return served.app.inject({
    method,
    url: `${API}${path}`,
    headers: {
      host: served.host,
      'x-api-key': served.key,
      ...(options.key ? { 'idempotency-key': options.key } : {}),
    },
    ...(options.body ? { payload: options.body } : {}),
  });
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

if (BACKEND === 'postgres') {
  describe(`connections to the primary of a multi-host DATABASE_URL [${BACKEND}]`, () => {
    /** A second server: read-only while it stands for a standby, then a primary that loses its standby. */
    let other: PostgresCluster;
    let shared: PostgresDatabase;
    let served: Served;
    const closing: Array<() => Promise<unknown>> = [];
    const onShared = (text: string) => withClient(process.env.TEST_DATABASE_URL!, (client) => client.query(text));
    const onOther = (text: string) => withClient(other.url, (client) => client.query(text));
    const name = () => new URL(shared.url).pathname.slice(1);
    const portOf = (url: string) => Number(new URL(url).port);

    before(async () => {
      const started = await startPostgresCluster();
      assert.ok(started, 'the PostgreSQL server binaries are installed');
      other = started;
      shared = await createPostgresDatabase('wum_connector');
      await onOther(`create database ${name()}`);
      await onOther('alter system set default_transaction_read_only = on');
      await onOther('select pg_reload_conf()');
    });
    after(async () => {
      for (const close of closing.reverse()) await close().catch(() => {});
      await onShared(`alter database ${name()} reset default_transaction_read_only`).catch(() => {});
      await shared?.drop();
      other?.stop();
    });

    test('hosts down or read-only are passed over: the pool, /readyz and outside clients all reach the writable one', async () => {
      const closed = await freePort();
      const url = `postgres://postgres@127.0.0.1:${closed},127.0.0.1:${portOf(other.url)},127.0.0.1:${portOf(shared.url)}/${name()}?target_session_attrs=read-write`;
      served = await serve(url, { statementTimeoutMs: 1000, queryTimeoutMs: 1500, connectTimeoutMs: 1000 });
      closing.push(() => served.app.close(), () => served.database.close());
      assert.equal(served.database.currentPrimary?.(), `127.0.0.1:${portOf(shared.url)}`);
      const added = await call(served, 'POST', '/users', { body: userBody('first@example.com'), key: 'first' });
      assert.equal(added.statusCode, 201, added.body);
      assert.equal((await served.app.inject({ url: '/readyz' })).statusCode, 200);
      const client = await served.database.connect!();
      try {
        const { rows } = await client.query<{ port: number }>('select inet_server_port() as port');
        assert.equal(rows[0]!.port, portOf(shared.url));
      } finally {
        await client.end();
      }
      const stored = await withClient(shared.url, (c) => c.query<{ n: number }>("select count(*)::int as n from users where email = 'first@example.com'"));
      assert.equal(stored.rows[0]!.n, 1, 'written on the writable server');
    });

    test('no writable server (primary lost, none promoted): 503 database_unavailable with Retry-After, promptly; /healthz 200; back as soon as one is', async () => {
      // The primary becomes read-only for new sessions, and its open sessions are cut: as a failover does.
      await onShared(`alter database ${name()} set default_transaction_read_only = on`);
      await onShared(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name()}' and pid <> pg_backend_pid()`);

      assert.equal((await served.app.inject({ url: '/healthz' })).statusCode, 200);
      const ready = await timed(() => served.app.inject({ url: '/readyz' }));
      assertProblem(ready.value, 503, 'database_unavailable');
      assert.ok(ready.ms < PROMPT_MS, `/readyz answered in ${ready.ms} ms`);
      for (const request of [
        () => call(served, 'GET', '/users'),
        () => call(served, 'POST', '/users', { body: userBody('during@example.com'), key: 'during' }),
        () => call(served, 'POST', '/users', { body: userBody('during2@example.com') }),
      ]) {
        const { value: res, ms } = await timed(request);
        assertProblem(res, 503, 'database_unavailable');
        assert.match(String(res.headers['retry-after']), /^\d+$/);
        assert.ok(ms < PROMPT_MS, `answered in ${ms} ms`);
      }

      // A server becomes writable again: the next requests reach it, the retry runs once.
      await onShared(`alter database ${name()} reset default_transaction_read_only`);
      const retried = await call(served, 'POST', '/users', { body: userBody('during@example.com'), key: 'during' });
      assert.equal(retried.statusCode, 201, retried.body);
      assert.equal(retried.headers['idempotent-replayed'], undefined, 'the first attempt changed nothing: the retry ran');
      assert.equal((await served.app.inject({ url: '/readyz' })).statusCode, 200);
      const stored = await withClient(shared.url, (c) => c.query<{ n: number }>("select count(*)::int as n from users where email like 'during%'"));
      assert.equal(stored.rows[0]!.n, 1, 'only the retried write exists');
    });

    test('a primary whose commits wait for a synchronous standby that is gone: 503, not a hang; once the commit completes, the retry replays its answer', async () => {
      await onOther('alter system reset default_transaction_read_only');
      await onOther('select pg_reload_conf()');
      // The test cluster runs with synchronous_commit off; the database's own setting wins.
      await onOther(`alter database ${name()} set synchronous_commit = on`);
      const blocked = await serve(`${other.url.replace(/\/postgres$/, '')}/${name()}`, {
        statementTimeoutMs: 1000,
        queryTimeoutMs: 1500,
        connectTimeoutMs: 1000,
      });
      closing.push(() => blocked.app.close(), () => blocked.database.close());
      await onOther("alter system set synchronous_standby_names = 'wum_absent_standby'");
      await onOther('select pg_reload_conf()');

      const body = userBody('waiting@example.com');
      const first = await timed(() => call(blocked, 'POST', '/users', { body, key: 'waiting' }));
      assertProblem(first.value, 503, 'database_unavailable');
      assert.equal(first.value.headers.location, undefined, 'no trace of the success that could not be confirmed');
      assert.ok(first.ms < PROMPT_MS, `answered in ${first.ms} ms`);
      assertProblem(await call(blocked, 'GET', '/users/waiting@example.com'), 404, 'user_not_found');

      // The standby is back (here: the requirement is lifted): the waiting commit completes.
      await onOther('alter system reset synchronous_standby_names');
      await onOther('select pg_reload_conf()');
      let retry = await call(blocked, 'POST', '/users', { body, key: 'waiting' });
      for (let attempt = 0; retry.statusCode === 409 && attempt < 20; attempt += 1) {
        // The first attempt's session may still be finishing its commit: it holds the key's lock.
        await new Promise((resolve) => setTimeout(resolve, 100));
        retry = await call(blocked, 'POST', '/users', { body, key: 'waiting' });
      }
      assert.equal(retry.statusCode, 201, retry.body);
      assert.equal(retry.headers['idempotent-replayed'], 'true', 'the first attempt had committed: its answer is replayed');
      const rows = await withClient(`${other.url.replace(/\/postgres$/, '')}/${name()}`, async (c) => ({
        users: (await c.query<{ n: number }>("select count(*)::int as n from users where email = 'waiting@example.com'")).rows[0]!.n,
        audit: (await c.query<{ n: number }>("select count(*)::int as n from audit_events where action = 'user.created' and after->>'email' = 'waiting@example.com'")).rows[0]!.n,
        events: (await c.query<{ n: number }>("select count(*)::int as n from events where type = 'user.created' and data->'user'->>'email' = 'waiting@example.com'")).rows[0]!.n,
      }));
      assert.deepEqual(rows, { users: 1, audit: 1, events: 1 });
    });
  });
}
