import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { freePort } from '../../harness/postgres-cluster.ts';
import { sendRequest, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { selfSignedCertificate, startJsonLinesReceiver, startSplunkHecReceiver, type StreamReceiver, type TestCertificate } from '../helpers/stream-receivers.ts';
import { LISTENING, START_TIMEOUT_MS, eventually, serverStorage, startServer, type ServerStorage } from '../reliability/support.ts';
import { json } from '../helpers/json.ts';

/*
 * No audit row lost across a crash (docs/api.md, "Audit streams": at least once, in audit order,
 * de-duplicable by id): a real server process streams to an HTTPS receiver and a Splunk HEC,
 * both over TLS with a self-signed certificate the server trusts (NODE_EXTRA_CA_CERTS), on
 * 127.0.0.1. The HEC is down while changes are made; the server is killed with SIGKILL in the
 * middle, restarted on the same storage with the HEC back, and every audit id of the workspace
 * then arrives at both, in order.
 */

const ADMIN_TOKEN = 'audit-stream-crash-admin-token-0123';
const API = '/api/external/v2';
const HEC_TOKEN = 'crash-hec-token-0123';
const USERS = 40;
const TEST_TIMEOUT = { timeout: 300_000 };

describe(`audit streams: SIGKILL mid-stream, restart, every row delivered in order [${BACKEND}]`, () => {
  const spawned: ServerProcess[] = [];
  let storage: ServerStorage | undefined;
  let cert: TestCertificate | undefined;
  let jsonl: StreamReceiver | undefined;
  let hec: StreamReceiver | undefined;
  after(async () => {
    for (const server of spawned) server.kill();
    await jsonl?.close();
    await hec?.close();
    cert?.remove();
    await storage?.remove();
  });

  async function start(port: number) {
    const server = startServer({
      ...storage!.env,
      PORT: String(port),
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_KEY: '0',
      OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32',
      WEBHOOK_TIMEOUT_MS: '2000',
      NODE_EXTRA_CA_CERTS: cert!.certFile,
    });
    spawned.push(server);
    await server.waitForOutput(LISTENING, 2 * START_TIMEOUT_MS);
    return server;
  }

  /** The distinct ids of `rows` in the order they first arrived (but the test send's synthetic row 0). */
  const firstArrivals = (rows: ReadonlyArray<Record<string, unknown>>) => [...new Set(rows.map((r) => r.id as number).filter((id) => id > 0))];

  test('every audit id arrives at both destinations after the restart, in order', TEST_TIMEOUT, async () => {
    storage = await serverStorage('wum_stream_crash');
    cert = selfSignedCertificate();
    jsonl = await startJsonLinesReceiver(cert);
    hec = await startSplunkHecReceiver(HEC_TOKEN, cert);
    const port = await freePort();
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const first = await start(port);

    assert.equal((await sendRequest(port, 'PUT', '/admin/v1/products/crm', { headers: admin, body: { roles: ['member'] } })).status, 201);
    const ws = await sendRequest(port, 'POST', '/admin/v1/workspaces', { headers: admin, body: { subdomain: 'streamy' } });
    assert.equal(ws.status, 201, ws.body);
    const key = json<'createWorkspace'>(ws).api_key.key as string;
    const host = `streamy.localhost:${port}`;
    const streams: Array<{ id: string; cursor: number }> = [];
    for (const destination of [
      { type: 'https', url: jsonl.url },
      { type: 'splunk_hec', url: hec.url, token: HEC_TOKEN },
    ]) {
      const res = await sendRequest(port, 'POST', `${API}/audit-streams`, { host, headers: { 'x-api-key': key }, body: { name: destination.type, format: 'json', destination } });
      assert.equal(res.status, 201, res.body);
      streams.push(res.json() as { id: string; cursor: number });
    }
    const test = await sendRequest(port, 'POST', `${API}/audit-streams/${streams[0]!.id}/test`, { host, headers: { 'x-api-key': key } });
    assert.deepEqual(test.json(), { ok: true, error: null }, 'the server trusts the receiver\'s certificate');

    hec.down(true);
    for (let i = 0; i < USERS; i += 1) {
      const res = await sendRequest(port, 'POST', `${API}/users`, {
        host,
        headers: { 'x-api-key': key },
        body: { user: { email: `crash${i}@example.com`, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] } },
      });
      assert.equal(res.status, 201, res.body);
      if (i === USERS / 2) await eventually(async () => firstArrivals(jsonl!.rows()).length > 0, 30_000, 'a first batch at the https receiver');
    }
    await eventually(async () => hec!.received.length > 0, 30_000, 'the HEC refused a batch');
    first.kill(); // SIGKILL the whole process group, with rows undelivered and batches in flight
    await first.waitForExit(10_000);
    hec.down(false);

    const second = await start(port);
    const listing = await sendRequest(port, 'GET', '/admin/v1/workspaces/streamy/audit-events?page_size=100', { headers: admin });
    assert.equal(listing.status, 200, listing.body);
    const ids = (json<'listWorkspaceAuditEvents'>(listing).audit_events as Array<{ id: number }>).map((e) => e.id).sort((a, b) => a - b);
    assert.ok(ids.length >= USERS + 2);
    for (const [receiver, stream] of [[jsonl, streams[0]!], [hec, streams[1]!]] as const) {
      const expected = ids.filter((id) => id > stream.cursor);
      await eventually(async () => firstArrivals(receiver.rows()).length >= expected.length, 120_000, `every row at ${receiver.url}`);
      assert.deepEqual(firstArrivals(receiver.rows()), expected, 'every audit id, in audit order (duplicates allowed)');
    }
    const health = async () => json<'getOwnAuditStream'>(await sendRequest(port, 'GET', `${API}/audit-streams/${streams[1]!.id}`, { host, headers: { 'x-api-key': key } }));
    await eventually(async () => (await health()).status === 'active', 30_000, 'the HEC stream active again');
    assert.equal((await health()).last_error, null);
    assert.match((await sendRequest(port, 'GET', '/metrics')).body, /^wum_audit_stream_rows_delivered_total\{stream="[^"]+"\} [1-9]/m);
    second.kill();
  });
});
