import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app.ts';
import { storageDependencies } from '../../src/server/app-dependencies.ts';
import { terminalLogStream } from '../../src/server/terminal-log.ts';
import { API, BACKEND, createTestContext, testConfig, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';

/** A log destination that keeps what is written to it. */
function capture(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

/** A stdout stand-in for a terminal that keeps what is written to it. */
function terminal(): { stdout: NodeJS.WriteStream; text: () => string } {
  const sink = new PassThrough();
  let text = '';
  sink.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stdout: Object.assign(sink, { isTTY: true }) as unknown as NodeJS.WriteStream, text: () => text };
}

/*
 * The server log holds one line per request (docs/operations.md, "Logs"): method, route
 * pattern, status, time and request id at info, the request's details only at debug, and on a
 * terminal each request is one readable line.
 */
describe(`one log line per request [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  const apps: FastifyInstance[] = [];

  /** An app on the test's database that logs at `level`, as JSON to a captured stream or to `logStream`. */
  async function loggedApp(level: string, logStream?: NodeJS.WritableStream): Promise<{ app: FastifyInstance; text: () => string }> {
    const config = testConfig({ LOG_LEVEL: level });
    const captured = capture();
    const app = await buildApp(config, {
      ...storageDependencies(config, ctx.database, ctx.store),
      ...(logStream ? { logStream } : { logger: { level, stream: captured.stream } }),
    });
    await app.ready();
    apps.push(app);
    return { app, text: captured.text };
  }

  /** Seven requests of every kind: a read, a write, a refusal, bad input, an unknown path, a probe, a query with a secret. */
  async function sendRequests(app: FastifyInstance): Promise<string[]> {
    const external = (method: 'GET' | 'POST', url: string, key: string | undefined, id: string, payload?: object) =>
      app.inject({ method, url: `${API}${url}`, headers: { host: ws.host, 'x-request-id': id, ...(key ? { 'x-api-key': key } : {}) }, ...(payload ? { payload } : {}) });
    const ids = ['log-1', 'log-2', 'log-3', 'log-4', 'log-5', 'log-6', 'log-7'];
    assert.equal((await external('GET', '/users', ws.apiKey, ids[0]!)).statusCode, 200);
    assert.equal((await external('POST', '/users', ws.apiKey, ids[1]!, userBody(`logged-${Date.now()}@example.com`))).statusCode, 201);
    assert.equal((await external('GET', '/users', undefined, ids[2]!)).statusCode, 401);
    assert.equal((await external('POST', '/users', ws.apiKey, ids[3]!, { user: { email: 'not-an-email' } })).statusCode, 400);
    assert.equal((await app.inject({ method: 'GET', url: '/nowhere?api_key=secret-in-a-query', headers: { 'x-request-id': ids[4]! } })).statusCode, 404);
    assert.equal((await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': ids[5]! } })).statusCode, 200);
    assert.equal((await external('GET', '/users/nobody%40example.com', ws.apiKey, ids[6]!)).statusCode, 404);
    return ids;
  }

  const jsonLines = (text: string) => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>);

  before(async () => {
    ctx = await createTestContext();
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('logs');
  });
  after(async () => {
    for (const app of apps) await app.close();
    await ctx?.close();
  });

  test('at info: exactly one JSON line per request, with method, route, status, time and request id, and no request or reply dump', async () => {
    const { app, text } = await loggedApp('info');
    const ids = await sendRequests(app);
    const lines = jsonLines(text());
    assert.equal(lines.length, ids.length, text());
    assert.deepEqual(lines.map((l) => l.reqId), ids);
    assert.deepEqual(
      lines.map((l) => [l.msg, l.method, l.route, l.statusCode]),
      [
        ['request completed', 'GET', '/api/external/v2/users', 200],
        ['request completed', 'POST', '/api/external/v2/users', 201],
        ['request completed', 'GET', '/api/external/v2/users', 401],
        ['request completed', 'POST', '/api/external/v2/users', 400],
        ['request completed', 'GET', 'unmatched', 404],
        ['request completed', 'GET', '/healthz', 200],
        ['request completed', 'GET', '/api/external/v2/users/:email', 404],
      ],
    );
    for (const line of lines) {
      assert.equal(typeof line.responseTime, 'number');
      assert.equal(line.level, 30);
      assert.equal(line.req, undefined, 'no request dump at info');
      assert.equal(line.res, undefined, 'no reply dump at info');
    }
    assert.doesNotMatch(text(), /secret-in-a-query|nobody|not-an-email/, 'route patterns, never URLs or bodies');
  });

  test('at debug: each request\'s arrival too, and its line carries the request\'s host and client address', async () => {
    const { app, text } = await loggedApp('debug');
    const ids = await sendRequests(app);
    const lines = jsonLines(text()).filter((l) => typeof l.reqId === 'string' && ids.includes(l.reqId));
    const incoming = lines.filter((l) => l.msg === 'incoming request');
    const completed = lines.filter((l) => l.msg === 'request completed');
    assert.deepEqual(incoming.map((l) => l.reqId), ids);
    assert.deepEqual(completed.map((l) => l.reqId), ids);
    const first = completed[0]!.req as Record<string, unknown>;
    assert.deepEqual(Object.keys(first).sort(), ['host', 'method', 'remoteAddress', 'route']);
    assert.equal(first.host, ws.host.replace(/:\d+$/, ''));
    assert.doesNotMatch(text(), /secret-in-a-query/);
  });

  test('on a terminal: one readable line per request, with its request id', async () => {
    const tty = terminal();
    const { app } = await loggedApp('info', terminalLogStream(tty.stdout));
    const ids = await sendRequests(app);
    await sleep(100);
    const lines = tty.text().split('\n').filter((line) => line.trim() !== '');
    assert.equal(lines.length, ids.length, tty.text());
    // Colours aside: "[12:00:00.123] INFO: GET /api/external/v2/users 200 1.2 ms {"reqId":"log-1"}".
    // eslint-disable-next-line no-control-regex
    const plain = lines.map((line) => line.replace(/\u001b\[[0-9;]*m/g, ''));
    assert.match(plain[0]!, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: GET \/api\/external\/v2\/users 200 [\d.]+ ms \{"reqId":"log-1"\}$/);
    assert.match(plain[4]!, /INFO: GET unmatched 404 [\d.]+ ms \{"reqId":"log-5"\}$/);
  });
});
