// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  createAdminClient,
  createClient,
  parseRetryAfter,
  retryDelay,
  retryPolicy,
  WumApiError,
  type RetryEvent,
  type RetryOptions,
} from 'wum/sdk';

/** One request the scripted server received. */
interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** What the scripted server does with a request: answer it, hang, or drop the connection. */
type Reply = { status: number; headers?: Record<string, string>; body?: unknown } | 'destroy' | 'hang';

const USER = {
  email: 'ada@example.com',
  role: 'non_owner',
  first_name: 'Ada',
  last_name: '-',
  apps: [],
  status: 'active',
  created_at: '2025-01-15T09:30:00.000Z',
  updated_at: '2025-01-15T09:30:00.000Z',
};
const EMPTY_PAGE = { users: [], pagination: { total_records: 0, current_page_number: 1, total_pages: 0, page_size: 30 }, total_count: 0 };

function problem(status: number, code: string, extra: Record<string, unknown> = {}) {
  return { type: `urn:wum:problem:${code}`, title: code, status, detail: `detail of ${code}`, code, request_id: `req-${code}`, ...extra };
}

/**
 * A local HTTP server that answers from a script, one reply per request in order (the last
 * one repeats), and records what it received: the retry behaviour is asserted on what reaches
 * the server, not on timings.
 */
describe('SDK retries, errors and .localhost resolution (against a scripted local server)', () => {
  let server: Server;
  let port: number;
  let script: Reply[] = [];
  let received: Received[] = [];
  let delays: number[] = [];
  let retries: RetryEvent[] = [];

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        const reply = script[Math.min(received.length - 1, script.length - 1)]!;
        if (reply === 'destroy') return void req.socket.destroy();
        if (reply === 'hang') return;
        const isProblem = reply.status >= 400 && typeof reply.body === 'object';
        const type = typeof reply.body === 'string' ? 'text/html' : isProblem ? 'application/problem+json' : 'application/json';
        res.writeHead(reply.status, { 'content-type': type, 'x-request-id': 'header-request-id', ...reply.headers });
        res.end(reply.body === undefined ? undefined : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    received = [];
    delays = [];
    retries = [];
  });

  /** Retry options that record waits instead of sleeping. */
  function recording(extra: RetryOptions = {}): RetryOptions {
    return {
      sleep: async (ms) => void delays.push(ms),
      random: () => 0.5,
      onRetry: (event) => void retries.push(event),
      ...extra,
    };
  }

  function client(extra: RetryOptions = {}, options: { timeoutMs?: number } = {}) {
    return createClient({ baseUrl: `http://acme.localhost:${port}`, apiKey: 'wum_test', retry: recording(extra), ...options });
  }

  test('users.add: 429 with Retry-After, then 201: waits at least Retry-After and resends with the same Idempotency-Key', async () => {
    script = [{ status: 429, headers: { 'retry-after': '2' }, body: problem(429, 'rate_limited') }, { status: 201, body: USER }];
    const user = await client().users.add({ email: 'ada@example.com', role: 'non_owner', apps: [] });
    assert.deepEqual(user, USER);
    assert.equal(received.length, 2);
    const keys = received.map((r) => r.headers['idempotency-key']);
    assert.match(keys[0] as string, /^[0-9a-f-]{36}$/);
    assert.equal(keys[1], keys[0], 'the retry carries the same key');
    assert.equal(received[1]!.body, received[0]!.body);
    assert.equal(delays.length, 1);
    assert.ok(delays[0]! >= 2000, `waited ${delays[0]} ms, at least Retry-After`);
    assert.deepEqual(
      retries.map((r) => [r.attempt, r.reason]),
      [[1, '429 rate_limited']],
    );
  });

  test('each users.add call has its own Idempotency-Key; a caller may give one', async () => {
    script = [{ status: 201, body: USER }];
    await client().users.add({ email: 'a@example.com', role: 'non_owner', apps: [] });
    await client().users.add({ email: 'b@example.com', role: 'non_owner', apps: [] });
    await client().users.add({ email: 'c@example.com', role: 'non_owner', apps: [] }, { idempotencyKey: 'my-key-1' });
    const keys = received.map((r) => r.headers['idempotency-key']);
    assert.notEqual(keys[0], keys[1]);
    assert.equal(keys[2], 'my-key-1');
  });

  test('503 is retried for a read too, then the answer is returned', async () => {
    script = [{ status: 503, headers: { 'retry-after': '1' }, body: problem(503, 'service_unavailable') }, { status: 200, body: EMPTY_PAGE }];
    const page = await client().users.list({ status: 'all' });
    assert.deepEqual(page, EMPTY_PAGE);
    assert.equal(received.length, 2);
    assert.equal(received[1]!.url, '/api/external/v2/users?status=all');
    assert.ok(delays[0]! >= 1000);
  });

  test('attempts are bounded: after maxAttempts the 429 surfaces as a WumApiError', async () => {
    script = [{ status: 429, headers: { 'retry-after': '1' }, body: problem(429, 'rate_limited') }];
    const error = await client({ maxAttempts: 3 }).users.get('ada@example.com').catch((e: unknown) => e);
    assert.ok(error instanceof WumApiError);
    assert.equal(error.status, 429);
    assert.equal(error.code, 'rate_limited');
    assert.equal(error.retryAfterSeconds, 1);
    assert.equal(received.length, 3);
    assert.equal(delays.length, 2);
  });

  test('time is bounded: a Retry-After beyond maxElapsedMs is not waited for', async () => {
    script = [{ status: 429, headers: { 'retry-after': '120' }, body: problem(429, 'rate_limited') }];
    const error = await client({ maxElapsedMs: 60_000 }).products.list().catch((e: unknown) => e);
    assert.ok(error instanceof WumApiError && error.code === 'rate_limited');
    assert.equal(received.length, 1);
    assert.deepEqual(delays, []);
  });

  test('retry: false sends once', async () => {
    script = [{ status: 503, body: problem(503, 'service_unavailable') }];
    const wum = createClient({ baseUrl: `http://localhost:${port}`, apiKey: 'k', retry: false });
    await assert.rejects(wum.users.list(), (e: unknown) => e instanceof WumApiError && e.status === 503);
    assert.equal(received.length, 1);
  });

  test('a dropped connection: users.add (Idempotency-Key) and reads are sent again', async () => {
    script = ['destroy', { status: 201, body: USER }];
    await client().users.add({ email: 'ada@example.com', role: 'non_owner', apps: [] });
    assert.equal(received.length, 2);
    assert.equal(received[1]!.headers['idempotency-key'], received[0]!.headers['idempotency-key']);
    assert.equal(retries[0]!.reason, 'network_error');

    received = [];
    script = ['destroy', { status: 204 }];
    await client().users.remove('ada@example.com');
    assert.equal(received.length, 2, 'users.remove is idempotent by contract');
  });

  test('a server that does not answer at all gets maxNetworkAttempts, fewer than a server asking to wait', async () => {
    script = ['destroy'];
    const error = await client({ maxAttempts: 8 }).users.list().catch((e: unknown) => e);
    assert.ok(error instanceof WumApiError && error.code === 'network_error');
    assert.equal(received.length, 3, 'the default maxNetworkAttempts');
    received = [];
    script = [{ status: 503, body: problem(503, 'service_unavailable') }];
    await client({ maxAttempts: 8 }).users.list().catch(() => undefined);
    assert.equal(received.length, 8);
  });

  test('a dropped connection: a call that is not safe to repeat (admin workspace creation) is not sent again', async () => {
    script = ['destroy', { status: 201, body: {} }];
    const admin = createAdminClient({ baseUrl: `http://localhost:${port}`, adminToken: 'x'.repeat(20), retry: recording() });
    const error = await admin.workspaces.create({ subdomain: 'acme' }).catch((e: unknown) => e);
    assert.ok(error instanceof WumApiError, String(error));
    assert.equal(error.status, 0);
    assert.equal(error.code, 'network_error');
    assert.equal(error.isNetworkError, true);
    assert.match(error.detail, /POST http:\/\/localhost:\d+\/admin\/v1\/workspaces: could not reach the server/);
    assert.equal(received.length, 1);
    assert.deepEqual(delays, []);
  });

  test('409 idempotency_key_in_use (the first attempt still runs) is waited out', async () => {
    script = [{ status: 409, headers: { 'retry-after': '1' }, body: problem(409, 'idempotency_key_in_use') }, { status: 201, body: USER }];
    await client().users.add({ email: 'ada@example.com', role: 'non_owner', apps: [] });
    assert.equal(received.length, 2);
  });

  test('other errors are not retried and carry the problem: status, code, title, detail, errors, requestId, type', async () => {
    const errors = [{ field: 'user.email', message: 'must be a valid email address' }];
    script = [{ status: 400, body: problem(400, 'validation_failed', { errors }) }];
    const error = await client().users.add({ email: 'nope', role: 'non_owner', apps: [] }).catch((e: unknown) => e);
    assert.ok(error instanceof WumApiError);
    assert.equal(received.length, 1);
    assert.deepEqual(
      { status: error.status, code: error.code, title: error.title, detail: error.detail, errors: error.errors, requestId: error.requestId, type: error.type },
      {
        status: 400,
        code: 'validation_failed',
        title: 'validation_failed',
        detail: 'detail of validation_failed',
        errors,
        requestId: 'req-validation_failed',
        type: 'urn:wum:problem:validation_failed',
      },
    );
    assert.equal(error.message, '400 validation_failed: detail of validation_failed');
  });

  test('an error body that is not problem details (a proxy page) gives code http_<status> and the X-Request-Id header', async () => {
    script = [{ status: 502, body: '<html><body>Bad gateway</body></html>' }];
    const error = await client().users.get('ada@example.com').catch((e: unknown) => e);
    assert.ok(error instanceof WumApiError);
    assert.equal(error.code, 'http_502');
    assert.equal(error.requestId, 'header-request-id');
    assert.match(error.detail, /Bad gateway/);
    assert.equal(received.length, 1);
  });

  test('no answer within timeoutMs: a read is retried, then fails with code timeout', async () => {
    script = ['hang'];
    const error = await client({ maxAttempts: 2 }, { timeoutMs: 200 }).users.get('ada@example.com').catch((e: unknown) => e);
    assert.ok(error instanceof WumApiError);
    assert.equal(error.code, 'timeout');
    assert.equal(error.status, 0);
    assert.equal(received.length, 2);
  });

  test('*.localhost resolves to loopback without /etc/hosts, and the Host header names the workspace', async () => {
    script = [{ status: 200, body: { products: [] } }];
    for (const host of [`acme.localhost:${port}`, `Some-Team.LOCALHOST:${port}`, `localhost:${port}`]) {
      const wum = createClient({ baseUrl: `http://${host}`, apiKey: 'wum_test', retry: false });
      assert.deepEqual(await wum.products.list(), []);
      assert.equal(received.at(-1)!.headers.host, host.toLowerCase());
      assert.equal(received.at(-1)!.headers['x-api-key'], 'wum_test');
      await wum.close();
    }
  });

  test('a base URL that already ends with /api/external/v2 is accepted; a malformed one is refused at once', async () => {
    script = [{ status: 200, body: { products: [] } }];
    await client().products.list();
    const wum = createClient({ baseUrl: `http://acme.localhost:${port}/api/external/v2/`, apiKey: 'k', retry: false });
    await wum.products.list();
    assert.equal(received.at(-1)!.url, '/api/external/v2/products');
    assert.throws(() => createClient({ baseUrl: 'acme.localhost:3000', apiKey: 'k' }), TypeError);
    assert.throws(() => createClient({ baseUrl: 'http://acme.localhost:3000', apiKey: '' }), TypeError);
  });
});

describe('retry delays', () => {
  test('full jitter under an exponential ceiling, capped; never below Retry-After', () => {
    const policy = retryPolicy({ baseDelayMs: 100, maxDelayMs: 1000, random: () => 0.999 });
    assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => retryDelay(policy, n)), [99, 199, 399, 799, 999, 999]);
    const low = retryPolicy({ baseDelayMs: 100, random: () => 0 });
    assert.equal(retryDelay(low, 3), 0, 'full jitter reaches down to 0');
    assert.equal(retryDelay(low, 3, 2000), 2000);
  });

  test('Retry-After in seconds or as an HTTP date', () => {
    const now = Date.parse('2025-01-15T09:30:00Z');
    assert.equal(parseRetryAfter('3', now), 3);
    assert.equal(parseRetryAfter('Wed, 15 Jan 2025 09:30:10 GMT', now), 10);
    assert.equal(parseRetryAfter('Wed, 15 Jan 2025 09:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter(null, now), undefined);
  });

  test('defaults are bounded', () => {
    const policy = retryPolicy(undefined);
    assert.deepEqual(
      {
        maxAttempts: policy.maxAttempts,
        maxNetworkAttempts: policy.maxNetworkAttempts,
        baseDelayMs: policy.baseDelayMs,
        maxDelayMs: policy.maxDelayMs,
        maxElapsedMs: policy.maxElapsedMs,
      },
      { maxAttempts: 5, maxNetworkAttempts: 3, baseDelayMs: 250, maxDelayMs: 10_000, maxElapsedMs: 60_000 },
    );
    assert.equal(retryPolicy(false).maxAttempts, 1);
    assert.equal(retryPolicy(false).maxNetworkAttempts, 1);
    assert.equal(retryPolicy({ maxAttempts: 2 }).maxNetworkAttempts, 2);
  });
});
