import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { buildApp } from '../../src/http/app.ts';
import { webhookUrlCheck } from '../../src/webhooks/url-guard.ts';
import { openDatabase, type OpenDatabase } from '../../src/storage/database.ts';
import { createIdempotencyStore } from '../../src/storage/idempotency.queries.ts';
import { mapDatabaseError } from '../../src/storage/pg-errors.ts';
import { createStore } from '../../src/storage/store.ts';
import { AppError } from '../../src/core/errors.ts';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { sendRequest } from '../../harness/server-process.ts';
import { ADMIN_TOKEN, API, BACKEND, createTestContext, testConfig, testKeyRing, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { assertProblem, eventually, rawExchange, sleep } from './support.ts';
import { json } from '../helpers/json.ts';

/*
 * Resource bounds (docs/security.md): every limit of docs/operations.md "Limits" holds and is answered
 * as problem+json with the documented status, never a 5xx other than 503.
 */

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

describe(`resource bounds [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('limits');
  });
  after(() => ctx.close());

  describe('HTTP server', () => {
    let app: FastifyInstance;
    let port: number;

    before(async () => {
      app = await ctx.buildApp({
        REQUEST_TIMEOUT_MS: '1000',
        HEADERS_TIMEOUT_MS: '500',
        KEEP_ALIVE_TIMEOUT_MS: '300',
        CONNECTION_TIMEOUT_MS: '20000',
        MAX_HEADER_BYTES: '8192',
        MAX_URL_LENGTH: '2048',
      });
      port = await listen(app);
    });

    test('the configured timeouts and header size are the Node server\'s', () => {
      assert.equal(app.server.requestTimeout, 1000);
      assert.equal(app.server.headersTimeout, 500);
      assert.equal(app.server.keepAliveTimeout, 300);
      assert.equal(app.server.timeout, 20000);
      assert.equal((app.server as unknown as { maxHeaderSize: number }).maxHeaderSize, 8192);
      assert.equal(app.initialConfig.bodyLimit, 64 * 1024, 'body limit stays 64 KiB');
    });

    test('a URL longer than MAX_URL_LENGTH → 414 uri_too_long, on any path, before the key is checked', async () => {
      const long = `${API}/users?status=all&pad=${'x'.repeat(2048)}`;
      assertProblem(await app.inject({ url: long, headers: { host: ws.host } }), 414, 'uri_too_long');
      const longPath = `${API}/users/${'a'.repeat(2100)}%40example.com`;
      assertProblem(await app.inject({ url: longPath, headers: { host: ws.host, 'x-api-key': ws.apiKey } }), 414, 'uri_too_long');
      assertProblem(await app.inject({ method: 'POST', url: `/${'z'.repeat(2100)}` }), 414, 'uri_too_long');
      // Over a real socket too.
      const res = await sendRequest(port, 'GET', long, { host: ws.host, headers: { 'x-api-key': ws.apiKey } });
      assertProblem(res, 414, 'uri_too_long');
      assert.ok(res.headers['x-request-id']);
      // Exactly at the limit is served.
      const atLimit = `${API}/users?status=all&pad=`;
      const ok = await app.inject({
        url: atLimit + 'x'.repeat(2048 - atLimit.length),
        headers: { host: ws.host, 'x-api-key': ws.apiKey },
      });
      assert.equal(ok.statusCode, 200, ok.body);
    });

    test('headers larger than MAX_HEADER_BYTES → 431 problem+json and the connection is closed', async () => {
      const res = await rawExchange(
        port,
        [`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'b'.repeat(9000)}\r\n\r\n`],
        5000,
      );
      assert.equal(res.status, 431, res.raw.slice(0, 300));
      assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
      assert.equal(json<'Problem'>(res.body).code, 'request_header_fields_too_large');
      assert.ok(res.headers['x-request-id']);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.ok(res.closedByServer);
    });

    test('headers not complete within HEADERS_TIMEOUT_MS (slow loris) → 408 request_timeout, connection closed', async () => {
      const res = await rawExchange(
        port,
        ['GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n', { delayMs: 200, data: 'X-Slow: 1\r\n' }],
        5000,
      );
      assert.equal(res.status, 408, res.raw.slice(0, 300));
      assert.equal(json<'Problem'>(res.body).code, 'request_timeout');
      assert.ok(res.closedByServer);
      assert.ok(res.elapsedMs < 4000, `answered after ${res.elapsedMs} ms`);
    });

    test('a body not complete within REQUEST_TIMEOUT_MS → 408 request_timeout, nothing stored', async () => {
      const body = JSON.stringify(userBody('slow-body@example.com'));
      const res = await rawExchange(
        port,
        [
          `POST ${API}/users HTTP/1.1\r\nHost: ${ws.host}\r\nX-Api-Key: ${ws.apiKey}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
        ],
        5000,
      );
      assert.equal(res.status, 408, res.raw.slice(0, 300));
      assert.equal(json<'Problem'>(res.body).code, 'request_timeout');
      assert.ok(res.closedByServer);
      assert.equal((await ctx.api(ws, 'GET', '/users/slow-body@example.com')).statusCode, 404);
    });

    test('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', async () => {
      const res = await rawExchange(port, ['GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n'], 5000);
      assert.equal(res.status, 200);
      assert.ok(res.closedByServer, 'closed by the server, not by our timeout');
      assert.ok(res.elapsedMs >= 250 && res.elapsedMs < 4000, `closed after ${res.elapsedMs} ms`);
    });

    test('malformed HTTP → 400 problem+json, not a bare socket reset', async () => {
      const res = await rawExchange(port, ['NOT HTTP AT ALL\r\n\r\n'], 5000);
      assert.equal(res.status, 400, res.raw.slice(0, 300));
      assert.equal(json<'Problem'>(res.body).code, 'bad_request');
    });

    test('an invalid Host (or X-Forwarded-Host behind a trusted proxy) → 400 bad_request, on every kind of route', async () => {
      const proxied = await ctx.buildApp({ TRUST_PROXY: 'true' });
      for (const host of [']', '[::1', 'a b', 'x:y:z', 'ws.localhost:99999999', 'acme.localhost/evil', 'a@b']) {
        for (const url of [`${API}/users`, '/admin/v1/workspaces', '/healthz', '/nowhere']) {
          const headers = { host, 'x-api-key': ws.apiKey, authorization: `Bearer ${ADMIN_TOKEN}` };
          assertProblem(await app.inject({ url, headers }), 400, 'bad_request');
          const viaProxy = { host: ws.host, 'x-forwarded-host': host, 'x-api-key': ws.apiKey, authorization: `Bearer ${ADMIN_TOKEN}` };
          assertProblem(await proxied.inject({ url, headers: viaProxy }), 400, 'bad_request');
        }
      }
      for (const host of ['localhost', '127.0.0.1:3000', '[::1]:3000', 'my_host.internal:8080']) {
        const res = await app.inject({ url: '/admin/v1/workspaces', headers: { host, authorization: `Bearer ${ADMIN_TOKEN}` } });
        assert.equal(res.statusCode, 200, `${host}: ${res.body}`);
      }
      // A workspace's host, however spelled (here with the root's trailing dot), never serves the
      // operator API (docs/contract.md Part B, Operator interface).
      assertProblem(await app.inject({ url: '/admin/v1/workspaces', headers: { host: `${ws.subdomain}.localhost.`, authorization: `Bearer ${ADMIN_TOKEN}` } }), 404, 'not_found');
    });

    test('page size stays at most 100 and the body at most 64 KiB', async () => {
      assertProblem(await ctx.api(ws, 'GET', '/users', { query: { page_size: '101' } }), 400, 'invalid_parameter');
      const big = userBody('big@example.com', { first_name: 'x'.repeat(70 * 1024) });
      assertProblem(await ctx.api(ws, 'POST', '/users', { body: big }), 413, 'payload_too_large');
    });
  });

  describe('load shedding', () => {
    test('over a threshold: 503 service_unavailable with Retry-After; /healthz and /metrics still answer; /readyz says not ready', async () => {
      // 1 MiB of heap is always exceeded: the first sample puts the app under pressure.
      const app = await ctx.buildApp({ SHED_HEAP_USED_MB: '1', SHED_RETRY_AFTER_SECONDS: '7', SHED_SAMPLE_INTERVAL_MS: '200' });
      const users = () => app.inject({ url: `${API}/users`, headers: { host: ws.host, 'x-api-key': ws.apiKey } });
      await eventually(async () => (await users()).statusCode === 503, 5000, 'the app sheds load');
      const res = await users();
      assertProblem(res, 503, 'service_unavailable');
      assert.equal(res.headers['retry-after'], '7');
      assert.match(json<'Problem'>(res).detail, /heap/);
      assert.ok(res.headers['x-request-id'], 'shed responses carry the request id');
      assert.equal(res.headers['x-content-type-options'], 'nosniff', 'and the security headers');
      const add = await app.inject({
        method: 'POST',
        url: `${API}/users`,
        headers: { host: ws.host, 'x-api-key': ws.apiKey },
        payload: userBody('shed@example.com'),
      });
      assertProblem(add, 503, 'service_unavailable');
      assert.equal((await ctx.api(ws, 'GET', '/users/shed@example.com')).statusCode, 404, 'a shed request changes nothing');
      assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200);
      assert.equal((await app.inject({ url: '/metrics' })).statusCode, 200);
      assertProblem(await app.inject({ url: '/readyz' }), 503, 'service_unavailable');
      assertProblem(
        await app.inject({ url: '/admin/v1/workspaces', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }),
        503,
        'service_unavailable',
      );
    });

    test('event-loop delay: a loop late on every turn sheds; a single pause shorter than the window does not', async () => {
      const busy = (ms: number) => {
        const until = Date.now() + ms;
        while (Date.now() < until); // a synchronous stall, as an overloaded process has them
      };
      const headers = { host: ws.host, 'x-api-key': ws.apiKey };
      const windowMs = 600;
      // 150 ms: between what one stall leaves in a window on a busy machine and the ~200 ms of the sustained stalls below.
      const app = await ctx.buildApp({ SHED_EVENT_LOOP_DELAY_MS: '150', SHED_SAMPLE_INTERVAL_MS: String(windowMs) });
      await sleep(2 * windowMs + 100); // past the start-up warm-up

      // One 300 ms stall in a 600 ms window: the mean delay stays below the threshold.
      busy(300);
      for (let i = 0; i < 16; i += 1) {
        assert.equal((await app.inject({ url: `${API}/users`, headers })).statusCode, 200, 'a single pause does not shed');
        await sleep(50);
      }

      // 200 ms stalls on every turn for a while: every tick is late, the mean is too.
      let stalling = true;
      const stall = () => {
        if (!stalling) return;
        busy(200);
        setTimeout(stall, 0);
      };
      stall();
      try {
        await eventually(async () => (await app.inject({ url: `${API}/users`, headers })).statusCode === 503, 5000, 'sheds under sustained delay');
        const res = await app.inject({ url: `${API}/users`, headers });
        if (res.statusCode === 503) assert.match(json<'Problem'>(res).detail, /event-loop delay/);
        assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'liveness is never shed');
      } finally {
        stalling = false;
      }
      await eventually(async () => (await app.inject({ url: `${API}/users`, headers })).statusCode === 200, 5000, 'recovers');
    });

    test('every threshold at 0 turns shedding off; the defaults do not shed a normal process', async () => {
      const off = await ctx.buildApp({ SHED_HEAP_USED_MB: '0', SHED_EVENT_LOOP_DELAY_MS: '0', SHED_SAMPLE_INTERVAL_MS: '100' });
      await sleep(300);
      const headers = { host: ws.host, 'x-api-key': ws.apiKey };
      assert.equal((await off.inject({ url: `${API}/users`, headers })).statusCode, 200);
      // ctx.app runs with the defaults and has been sampled by now (the file runs for seconds).
      assert.equal((await ctx.app.inject({ url: `${API}/users`, headers })).statusCode, 200);
      assert.equal((await ctx.app.inject({ url: '/readyz' })).statusCode, 200);
    });

    test('while the app closes, the request in flight completes and the one behind it on its connection → 503 problem+json', async () => {
      let release!: () => void;
      let entered!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const inFlight = new Promise<void>((resolve) => (entered = resolve));
      // /readyz waits on this gate, so a request is in flight when close() starts.
      const app = await buildApp(testConfig(), {
        checkWebhookUrl: webhookUrlCheck(testConfig().webhooks),
        store: ctx.store,
        idempotency: createIdempotencyStore(ctx.database.db),
        ping: async () => {
          entered();
          await gate;
          await ctx.database.ping();
        },
        logger: false,
      });
      const port = await listen(app);
      const socket = connect(port, '127.0.0.1');
      let raw = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const request = 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
      socket.write(request);
      await inFlight;
      const closing = app.close();
      // The server stops listening once close() has passed its preClose hooks.
      await eventually(async () => !app.server.listening, 5000, 'the server stops listening');
      socket.write(request); // a second request on the open connection, during the drain
      await sleep(100);
      release();
      await Promise.race([closed, sleep(8000)]);
      await closing;
      const [first = '', second = ''] = raw.split(/(?=HTTP\/1\.1 \d{3} )/);
      assert.match(first, /^HTTP\/1\.1 200 /, raw);
      assert.match(first, /"status":"ready"/);
      assert.match(second, /^HTTP\/1\.1 503 /, raw);
      assert.match(second, /content-type: application\/problem\+json/i);
      assert.match(second, /connection: close/i);
      assert.match(second, /retry-after: \d+/i);
      assert.match(second, /"code":"service_unavailable"/);
      assert.ok(socket.destroyed || socket.readableEnded, 'the server closed the connection');
    });
  });

  describe('database errors that mean "not now" are 503 with Retry-After, never 500', () => {
    test('statement timeout (57014), full pool, deadlock → service_unavailable; lost or refused connection, shutdown, read-only server → database_unavailable', () => {
      const drizzleWrapped = (cause: object) => Object.assign(new Error('Failed query: select …'), { cause });
      const busy: object[] = [
        drizzleWrapped({ code: '57014', message: 'canceling statement due to statement timeout' }),
        drizzleWrapped({ code: '40P01', message: 'deadlock detected' }),
        new Error('timeout exceeded when trying to connect'),
      ];
      const unavailable: object[] = [
        drizzleWrapped({ code: '57P01', message: 'terminating connection due to administrator command' }),
        drizzleWrapped({ code: '08006', message: 'connection failure' }),
        drizzleWrapped({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' }),
        drizzleWrapped(new Error('Connection terminated unexpectedly')),
        drizzleWrapped({ code: '25006', message: 'cannot execute INSERT in a read-only transaction' }),
        drizzleWrapped(new Error('Client has encountered a connection error and is not queryable')),
      ];
      for (const [cases, code] of [[busy, 'service_unavailable'], [unavailable, 'database_unavailable']] as const) {
        for (const error of cases) {
          const mapped = mapDatabaseError(error);
          assert.ok(mapped instanceof AppError, JSON.stringify(error));
          assert.equal(mapped.code, code, JSON.stringify(error));
          assert.equal(mapped.status, 503);
          assert.match(mapped.headers?.['retry-after'] ?? '', /^\d+$/);
        }
      }
      const other = drizzleWrapped({ code: '42P01', message: 'relation does not exist' });
      assert.equal(mapDatabaseError(other), other, 'a bug stays a bug (500)');
    });
  });

  test('a failure to record an idempotent response does not turn a done change into an error', async () => {
    const idempotency = createIdempotencyStore(ctx.database.db);
    const app = await buildApp(testConfig(), {
      checkWebhookUrl: webhookUrlCheck(testConfig().webhooks),
      store: ctx.store,
      idempotency: {
        ...idempotency,
        complete: async () => {
          throw Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
        },
      },
      ping: ctx.database.ping,
      logger: false,
    });
    const res = await app.inject({
      method: 'POST',
      url: `${API}/users`,
      headers: { host: ws.host, 'x-api-key': ws.apiKey, 'idempotency-key': 'unrecorded' },
      payload: userBody('unrecorded@example.com'),
    });
    await app.close();
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(json<'User'>(res).email, 'unrecorded@example.com');
    // A retry while the claim is fresh is told the key is in use, not run twice.
    const retry = await ctx.api(ws, 'POST', '/users', {
      headers: { 'idempotency-key': 'unrecorded' },
      body: userBody('unrecorded@example.com'),
    });
    assertProblem(retry, 409, 'idempotency_key_in_use');
  });

  if (BACKEND === 'postgres') {
    describe('PostgreSQL statement timeout and pool wait', () => {
      let created: PostgresDatabase;
      let blocker: pg.Client;
      const opened: OpenDatabase[] = [];
      const apps: FastifyInstance[] = [];

      async function appOn(options: { poolSize: number; statementTimeoutMs: number; connectTimeoutMs: number }) {
        const database = await openDatabase({ kind: 'postgres', url: created.url, ...options });
        opened.push(database);
        const app = await buildApp(testConfig(), {
          checkWebhookUrl: webhookUrlCheck(testConfig().webhooks),
          store: createStore(database.db, { keyRing: testKeyRing() }),
          idempotency: createIdempotencyStore(database.db),
          ping: database.ping,
          logger: false,
        });
        apps.push(app);
        return { app, database };
      }

      before(async () => {
        created = await createPostgresDatabase('wum_limits');
        blocker = new pg.Client({ connectionString: created.url });
        await blocker.connect();
      });
      after(async () => {
        await blocker.end().catch(() => {});
        for (const app of apps) await app.close();
        for (const database of opened) await database.close();
        await created.drop();
      });

      async function workspaceOn(app: FastifyInstance, subdomain: string) {
        const res = await app.inject({
          method: 'POST',
          url: '/admin/v1/workspaces',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          payload: { subdomain },
        });
        assert.equal(res.statusCode, 201, res.body);
        return { host: `${subdomain}.localhost:3000`, key: json<'createWorkspace'>(res).api_key.key as string };
      }

      test('every pooled connection carries statement_timeout, also the one that ran the migrations', async () => {
        const { database } = await appOn({ poolSize: 1, statementTimeoutMs: 1234, connectTimeoutMs: 1000 });
        const result = (await database.db.execute(sql`show statement_timeout`)) as unknown as {
          rows: Array<{ statement_timeout: string }>;
        };
        assert.equal(result.rows[0]?.statement_timeout, '1234ms');
      });

      test('a statement cancelled by statement_timeout → 503 service_unavailable with Retry-After', async () => {
        const { app } = await appOn({ poolSize: 2, statementTimeoutMs: 300, connectTimeoutMs: 5000 });
        const tenant = await workspaceOn(app, `st-${process.pid}`);
        await blocker.query('begin');
        await blocker.query('lock table users in access exclusive mode');
        try {
          const started = Date.now();
          const res = await app.inject({ url: `${API}/users`, headers: { host: tenant.host, 'x-api-key': tenant.key } });
          assertProblem(res, 503, 'service_unavailable');
          assert.match(String(res.headers['retry-after']), /^\d+$/);
          assert.ok(Date.now() - started < 3000);
          const add = await app.inject({
            method: 'POST',
            url: `${API}/users`,
            headers: { host: tenant.host, 'x-api-key': tenant.key, 'idempotency-key': 'st-add' },
            payload: userBody('timeout@example.com', { apps: [] }),
          });
          assertProblem(add, 503, 'service_unavailable');
        } finally {
          await blocker.query('rollback');
        }
        const retried = await app.inject({
          method: 'POST',
          url: `${API}/users`,
          headers: { host: tenant.host, 'x-api-key': tenant.key, 'idempotency-key': 'st-add' },
          payload: userBody('timeout@example.com', { apps: [] }),
        });
        assert.equal(retried.statusCode, 201, 'a 503 stores no idempotent response: the retry runs');
      });

      test('no free connection within DATABASE_CONNECT_TIMEOUT_MS → 503, and the blocked request still completes', async () => {
        const { app } = await appOn({ poolSize: 1, statementTimeoutMs: 0, connectTimeoutMs: 300 });
        const tenant = await workspaceOn(app, `pool-${process.pid}`);
        const headers = { host: tenant.host, 'x-api-key': tenant.key };
        await app.inject({ url: `${API}/users`, headers }); // warm: key lookups done, last_used_at written
        await blocker.query('begin');
        await blocker.query('lock table users in access exclusive mode');
        let first: Promise<{ statusCode: number }>;
        try {
          first = app.inject({ url: `${API}/users`, headers });
          await sleep(100); // the first request now holds the only connection, waiting for the lock
          const second = await app.inject({ url: `${API}/users`, headers });
          assertProblem(second, 503, 'service_unavailable');
        } finally {
          await blocker.query('rollback');
        }
        assert.equal((await first).statusCode, 200);
      });
    });
  }
});
