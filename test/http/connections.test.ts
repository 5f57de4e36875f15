import assert from 'node:assert/strict';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { BACKEND, createTestContext, type TestContext } from '../helpers/test-context.ts';
import { rawRequest } from '../helpers/raw-http.ts';

/** Opens a socket to 127.0.0.1:`port` that sends nothing; resolves once connected. */
function idleSocket(port: number): Promise<Socket & { closedAt?: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }) as Socket & { closedAt?: number };
    socket.on('close', () => (socket.closedAt = Date.now()));
    socket.on('error', () => {});
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

async function waitFor(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function metric(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
}

describe(`idle and excess connections are bounded [${BACKEND}]`, () => {
  let ctx: TestContext;
  let app: FastifyInstance;
  let port: number;

  before(async () => {
    ctx = await createTestContext();
    app = await ctx.buildApp({ IDLE_TIMEOUT_MS: '600', KEEP_ALIVE_TIMEOUT_MS: '600', MAX_CONNECTIONS: '30' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  after(async () => {
    await app?.close();
    await ctx.close();
  });

  test('sockets that send nothing are closed after IDLE_TIMEOUT_MS while other clients are served', async () => {
    const started = Date.now();
    const idle = await Promise.all(Array.from({ length: 20 }, () => idleSocket(port)));
    for (let i = 0; i < 5; i += 1) assert.equal((await rawRequest(port, 'GET', '/healthz', { host: 'localhost' })).status, 200);
    const metrics = await rawRequest(port, 'GET', '/metrics', { host: 'localhost' });
    assert.ok(metric(metrics.body, 'http_open_connections') >= 20, metrics.body.slice(0, 200));
    await waitFor('the idle sockets to be closed', () => idle.every((s) => s.closedAt !== undefined), 5000);
    for (const socket of idle) assert.ok(socket.closedAt! - started >= 500, 'not before the timeout');
    assert.equal((await rawRequest(port, 'GET', '/healthz', { host: 'localhost' })).status, 200);
  });

  test('a keep-alive connection idle between requests is closed too', async () => {
    const socket = await idleSocket(port);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.write('GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n');
    await waitFor('the answer', () => answer.startsWith('HTTP/1.1 200'), 5000);
    await waitFor('the keep-alive socket to be closed', () => socket.closedAt !== undefined, 5000);
  });

  test('past MAX_CONNECTIONS new connections are closed on arrival and counted; the process keeps serving once they go', async () => {
    const held = await Promise.all(Array.from({ length: 30 }, () => idleSocket(port)));
    const opened = Date.now();
    const extra = await idleSocket(port);
    await waitFor('the connection over the cap to be closed', () => extra.closedAt !== undefined, 2000);
    assert.ok(extra.closedAt! - opened < 500, 'closed on arrival, not by the idle timeout');
    await waitFor('the held sockets to time out', () => held.every((s) => s.closedAt !== undefined), 5000);
    const metrics = await rawRequest(port, 'GET', '/metrics', { host: 'localhost' });
    assert.ok(metric(metrics.body, 'http_connections_refused_total') >= 1, 'refused connections are counted');
    assert.equal(metrics.status, 200);
  });
});
