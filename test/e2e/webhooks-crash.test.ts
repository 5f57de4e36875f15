import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../../harness/postgres-cluster.ts';
import { sendRequest, type ServerProcess } from '../../harness/server-process.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { LISTENING, START_TIMEOUT_MS, eventually, serverStorage, startServer, type ServerStorage } from '../reliability/support.ts';
import { json } from '../helpers/json.ts';

/*
 * No event lost across a crash (docs/contract.md Part B, Events and webhooks: "Deliveries survive
 * restarts and crashes"): a real server process with undelivered events (its receiver
 * answering 503) is killed with SIGKILL, restarted on the same storage with the receiver
 * healthy, and every event of the feed then arrives, signed, with its own webhook-id.
 */

const ADMIN_TOKEN = 'webhook-crash-admin-token-0123';
const API = '/api/external/v2';
const USERS = 60;
const TEST_TIMEOUT = { timeout: 300_000 };

describe(`webhooks: SIGKILL with undelivered events, restart, all delivered [${BACKEND}]`, () => {
  const spawned: ServerProcess[] = [];
  let storage: ServerStorage | undefined;
  let receiver: WebhookReceiver | undefined;
  after(async () => {
    for (const server of spawned) server.kill();
    await receiver?.close();
    await storage?.remove();
  });

  async function start(port: number) {
    const server = startServer({
      ...storage!.env,
      PORT: String(port),
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      RATE_LIMIT_PER_KEY: '0',
      WEBHOOK_ALLOW_HTTP: 'true',
      // Retries every second, for long enough that the endpoint is not disabled meanwhile.
      WEBHOOK_RETRY_SCHEDULE: Array(30).fill('1s').join(','),
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_POLL_INTERVAL_MS: '50',
    });
    spawned.push(server);
    // Twice the usual start time: this test starts the server twice on a loaded machine.
    await server.waitForOutput(LISTENING, 2 * START_TIMEOUT_MS);
    return server;
  }

  test('every event is delivered after the restart', TEST_TIMEOUT, async () => {
    storage = await serverStorage('wum_webhook_crash');
    receiver = await startWebhookReceiver();
    receiver.respondWith(503);
    const port = await freePort();
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const first = await start(port);

    assert.equal((await sendRequest(port, 'PUT', '/admin/v1/products/crm', { headers: admin, body: { roles: ['member'] } })).status, 201);
    const ws = await sendRequest(port, 'POST', '/admin/v1/workspaces', { headers: admin, body: { subdomain: 'crashy' } });
    assert.equal(ws.status, 201, ws.body);
    const key = json<'createWorkspace'>(ws).api_key.key as string;
    const created = await sendRequest(port, 'POST', '/admin/v1/workspaces/crashy/webhook-endpoints', { headers: admin, body: { url: receiver.url } });
    assert.equal(created.status, 201, created.body);
    const secret = json<'createWebhookEndpoint'>(created).secret as string;
    const host = `crashy.localhost:${port}`;

    for (let i = 0; i < USERS; i += 1) {
      const res = await sendRequest(port, 'POST', `${API}/users`, {
        host,
        headers: { 'x-api-key': key },
        body: { user: { email: `crash${i}@example.com`, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] } },
      });
      assert.equal(res.status, 201, res.body);
    }
    await receiver.waitFor(1);
    const endpointId = json<'createWebhookEndpoint'>(created).id as string;
    await eventually(
      async () => new RegExp(`^wum_webhook_delivery_failures_total\\{endpoint="${endpointId}"\\} [1-9]`, 'm').test((await sendRequest(port, 'GET', '/metrics')).body),
      30_000,
      'failed attempts counted by endpoint',
    );
    first.kill(); // SIGKILL the whole process group, with deliveries pending and in flight
    await first.waitForExit(10_000);
    const refusedBeforeKill = receiver.received.length;
    receiver.respondWith(204);

    const second = await start(port);
    const feed = await sendRequest(port, 'GET', `${API}/events?limit=1000`, { host, headers: { 'x-api-key': key } });
    const ids = (json<'listEvents'>(feed).events as Array<{ id: string }>).map((e) => e.id);
    assert.equal(ids.length, USERS, 'every acknowledged change has its event');

    const delivered = () => new Set(receiver!.received.filter((r) => r.status === 204).map((r) => r.headers['webhook-id'] as string));
    await eventually(async () => delivered().size === USERS, 120_000, `all ${USERS} events delivered (have ${delivered().size})`);
    assert.deepEqual([...delivered()].sort(), [...ids].sort());
    for (const r of receiver.received.filter((x) => x.status === 204)) {
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    }
    assert.ok(refusedBeforeKill >= 1, 'some attempts were made (and refused) before the kill');

    // The pending gauge drains to zero once all are delivered.
    await eventually(
      async () => /^wum_webhook_deliveries_pending 0$/m.test((await sendRequest(port, 'GET', '/metrics')).body),
      30_000,
      'no pending delivery left',
    );
    const metrics = (await sendRequest(port, 'GET', '/metrics')).body;
    assert.match(metrics, /^wum_webhook_delivery_latency_seconds_count \d+$/m);
    second.kill();
  });
});
