import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { sendRequest } from '../../harness/server-process.ts';
import { spawnedServers, type SpawnedServers } from '../helpers/spawned-server.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { eventually } from '../reliability/support.ts';
import { json } from '../helpers/json.ts';

/*
 * No event lost across a crash (docs/contract.md Part B, Events and webhooks: "Deliveries survive
 * restarts and crashes"): a real server process with undelivered events (its receiver
 * answering 503) is killed with SIGKILL, restarted on the same storage with the receiver
 * healthy, and every event of the feed then arrives, signed, with its own webhook-id.
 */

const USERS = 60;
const TEST_TIMEOUT = { timeout: 300_000 };

describe(`webhooks: SIGKILL with undelivered events, restart, all delivered [${BACKEND}]`, () => {
  let servers: SpawnedServers | undefined;
  let receiver: WebhookReceiver | undefined;
  after(async () => {
    await receiver?.close();
    await servers?.close();
  });

  test('every event is delivered after the restart', TEST_TIMEOUT, async () => {
    servers = await spawnedServers('wum_webhook_crash', {
      WEBHOOK_ALLOW_HTTP: 'true',
      // Retries every second, for long enough that the endpoint is not disabled meanwhile.
      WEBHOOK_RETRY_SCHEDULE: Array(30).fill('1s').join(','),
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_POLL_INTERVAL_MS: '50',
    });
    const { port, admin } = servers;
    receiver = await startWebhookReceiver();
    receiver.respondWith(503);
    const first = await servers.start();

    const ws = await servers.seed('crashy');
    const created = await sendRequest(port, 'POST', '/admin/v1/workspaces/crashy/webhook-endpoints', { headers: admin, body: { url: receiver.url } });
    assert.equal(created.status, 201, created.body);
    const secret = json<'createWebhookEndpoint'>(created).secret as string;

    for (let i = 0; i < USERS; i += 1) await servers.addUser(ws, `crash${i}@example.com`);
    await receiver.waitFor(1);
    const endpointId = json<'createWebhookEndpoint'>(created).id as string;
    await eventually(
      async () => new RegExp(`^wum_webhook_delivery_failures_total\\{endpoint="${endpointId}"\\} [1-9]`, 'm').test((await sendRequest(port, 'GET', '/metrics')).body),
      30_000,
      'failed attempts counted by endpoint',
    );
    await servers.crash(first); // SIGKILL the whole process group, with deliveries pending and in flight
    const refusedBeforeKill = receiver.received.length;
    receiver.respondWith(204);

    const second = await servers.start();
    const feed = await servers.api(ws, 'GET', '/events?limit=1000');
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
