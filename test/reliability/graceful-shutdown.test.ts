import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { freePort } from '../../harness/free-port.ts';
import { listeningPid, sendRequest, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { LISTENING, START_TIMEOUT_MS, attempt, serverStorage, startServer, type Attempt, type ServerStorage } from './support.ts';
import { json } from '../helpers/json.ts';

/*
 * Graceful shutdown (docs/security.md): SIGTERM while clients keep sending. Every request the server
 * accepted completes with its normal answer (or, arriving during the drain, a 503
 * problem+json); a request that failed on the client side never reached the application (the
 * server's log has no trace of it); nothing is cut mid-way, nothing else is a 5xx, the process
 * exits 0, and every acknowledged add is stored while no refused one is.
 */

const ADMIN_TOKEN = 'drain-admin-token-0123456789';
const API = '/api/external/v2';
const WORKERS = 30;
const SIGTERM_AFTER_RESPONSES = 80;
/** Socket errors that mean "not accepted": refused, or closed before the request was read. */
const NOT_ACCEPTED = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']);

interface LogLine {
  reqId?: string;
  msg?: string;
  statusCode?: number;
}

describe(`graceful shutdown: SIGTERM under load [${BACKEND}]`, () => {
  const spawned: ServerProcess[] = [];
  let storage: ServerStorage | undefined;
  after(async () => {
    for (const server of spawned) server.kill();
    await storage?.remove();
  });

  test('every accepted request completes; nothing is cut mid-way; exit status 0', { timeout: 180_000 }, async (t) => {
    storage = await serverStorage('wum_drain');
    const port = await freePort();
    // At debug, each request's arrival is logged too ("incoming request"), not only its answer.
    const server = startServer({ ...storage.env, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'debug', RATE_LIMIT_PER_KEY: '0' });
    spawned.push(server);
    await server.waitForOutput(LISTENING, START_TIMEOUT_MS);
    const pid = listeningPid(server.stdout())!;
    const admin = (method: string, path: string, body?: unknown) =>
      sendRequest(port, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });
    assert.equal((await admin('PUT', '/products/crm', { roles: ['member'] })).status, 201);
    const workspace = await admin('POST', '/workspaces', { subdomain: 'drain' });
    const apiKey: string = json<'createWorkspace'>(workspace).api_key.key;

    const results = new Map<string, { email: string; result: Attempt; finishedAt: number }>();
    let responses = 0;
    let sigtermAt = 0;
    let n = 0;
    const worker = async () => {
      for (;;) {
        n += 1;
        const requestId = `drain-${n}`;
        const email = `d${n}@drain.example`;
        const result = await attempt(port, 'POST', `${API}/users`, {
          host: `drain.localhost:${port}`,
          headers: { 'x-api-key': apiKey, 'x-request-id': requestId },
          body: { user: { email, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] } },
          timeoutMs: 30_000,
        });
        results.set(requestId, { email, result, finishedAt: Date.now() });
        if (result.ok) responses += 1;
        if (responses >= SIGTERM_AFTER_RESPONSES && sigtermAt === 0) {
          sigtermAt = Date.now();
          process.kill(pid, 'SIGTERM');
        }
        // Keep sending until the port is closed.
        if (!result.ok && result.error === 'ECONNREFUSED') return;
      }
    };
    const loadStarted = Date.now();
    await Promise.all(Array.from({ length: WORKERS }, worker));
    assert.equal(await server.waitForExit(30_000), 0, `exit status after SIGTERM${server.stderr().slice(-2000)}`);
    t.diagnostic(`SIGTERM ${sigtermAt - loadStarted} ms into the load; exited ${Date.now() - sigtermAt} ms after it`);

    const log = server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
    const incoming = new Set(log.filter((l) => l.msg === 'incoming request' && l.reqId?.startsWith('drain-')).map((l) => l.reqId!));
    const completed = new Map(
      log.filter((l) => l.msg === 'request completed' && l.reqId?.startsWith('drain-')).map((l) => [l.reqId!, l.statusCode]),
    );

    let afterSigterm = 0;
    let drained503 = 0;
    const stored: string[] = [];
    const neverReached: string[] = [];
    for (const [requestId, { email, result, finishedAt }] of results) {
      if (result.ok) {
        const { res } = result;
        assert.ok([201, 503].includes(res.status), `${requestId}: ${res.status} ${res.body}`);
        if (res.status === 503) {
          assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
          assert.equal(json<'Problem'>(res).code, 'service_unavailable');
          assert.match(String(res.headers['retry-after']), /^\d+$/);
          drained503 += 1;
        } else {
          assert.equal(json<'User'>(res).email, email);
          stored.push(email);
        }
        assert.equal(completed.get(requestId), res.status, `${requestId}: the server logged the answer the client got`);
        if (finishedAt > sigtermAt) afterSigterm += 1;
      } else {
        assert.ok(NOT_ACCEPTED.has(result.error), `${requestId}: ${result.error}`);
        assert.ok(!incoming.has(requestId), `${requestId} failed with ${result.error} but had reached the application`);
        neverReached.push(email);
      }
    }
    for (const requestId of incoming) {
      assert.ok(completed.has(requestId), `${requestId} reached the application and was answered`);
    }
    t.diagnostic(
      `${results.size} requests: ${stored.length} added, ${drained503} answered 503 while draining, ` +
        `${neverReached.length} not accepted; ${afterSigterm} answered after SIGTERM`,
    );
    assert.ok(afterSigterm > 0, 'requests in flight at SIGTERM were answered');

    // What was acknowledged is stored; what was not accepted is not.
    const emails = new Set(await storage.inspect(async (query) => (await query('select email from users')).map((r) => String(r.email))));
    for (const email of stored) assert.ok(emails.has(email), `${email} was acknowledged and is stored`);
    for (const email of neverReached) assert.ok(!emails.has(email), `${email} was never accepted and is not stored`);
    assert.equal(emails.size, stored.length, 'nothing else was stored');
  });
});
