import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../../src/config/load-config.ts';
import { startService, type Service } from '../../src/server/service.ts';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { ADMIN_TOKEN, API, BACKEND, memoryDatabase, testConfig, userBody } from '../helpers/test-context.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { json, userData } from '../helpers/json.ts';

/*
 * A change's webhook delivery leaves at once, not at the worker's next poll (docs/operations.md,
 * "Webhooks and the event feed"): the poll is 30 s here, so only a wake explains a delivery within 2 s (the
 * bound leaves room for a loaded test machine; bench:webhooks measures the latency itself).
 * In one process the committed change wakes the process's own worker (both backends, with and
 * without a request transaction); on PostgreSQL a process without a worker announces its
 * deliveries with NOTIFY, and another process's worker, listening, sends them.
 */

/** Far longer than the bound below: a delivery within the bound was not found by a poll. */
const SLOW_POLL = { WEBHOOK_POLL_INTERVAL_MS: '30000', WEBHOOK_ALLOW_HTTP: 'true', RATE_LIMIT_PER_KEY: '0' };
/** How soon a delivery must arrive after its change was answered, in ms. */
const WITHIN_MS = 2000;

let counter = 0;

/** A workspace (through `service`) with the crm product, one endpoint to `receiver`, and its key. */
async function workspaceWithEndpoint(service: Service, receiver: WebhookReceiver): Promise<{ host: string; key: string }> {
  counter += 1;
  const subdomain = `wake-${process.pid}-${counter}`;
  const admin = (method: 'POST' | 'PUT', url: string, payload: object) =>
    service.app.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload });
  const product = await admin('PUT', '/products/crm', { roles: ['member'] });
  assert.ok(product.statusCode < 300, product.body);
  const created = await admin('POST', '/workspaces', { subdomain });
  assert.equal(created.statusCode, 201, created.body);
  const endpoint = await admin('POST', `/workspaces/${subdomain}/webhook-endpoints`, { url: receiver.url });
  assert.equal(endpoint.statusCode, 201, endpoint.body);
  return { host: `${subdomain}.localhost`, key: json<'createWorkspace'>(created).api_key.key as string };
}

/** Adds a user through `service`; resolves with how long after the answer the receiver got its event, in ms. */
async function addAndTimeDelivery(service: Service, receiver: WebhookReceiver, headers: Record<string, string> = {}): Promise<number> {
  const { host, key } = await workspaceWithEndpoint(service, receiver);
  // The worker claimed (and found nothing) at start; it now sleeps its 30 s poll.
  await sleep(300);
  const before = receiver.received.length;
  const email = `wake${counter}@example.com`;
  const added = await service.app.inject({
    method: 'POST',
    url: `${API}/users`,
    headers: { host, 'x-api-key': key, ...headers },
    payload: userBody(email),
  });
  assert.equal(added.statusCode, 201, added.body);
  const answered = performance.now();
  const [delivery] = (await receiver.waitFor(before + 1, WITHIN_MS * 3)).slice(before);
  const took = performance.now() - answered;
  assert.equal(userData(json<'Event'>(delivery!.body)).user.email, email);
  return took;
}

/** The test configuration over this file's database (PGlite in memory, or `database`). */
function configFor(database: PostgresDatabase | undefined, env: Record<string, string> = {}): Config {
  if (database) return testConfig({ ...SLOW_POLL, DATABASE_URL: database.url, DATABASE_POOL_SIZE: '5', ...env });
  return { ...testConfig({ ...SLOW_POLL, ...env }), storage: memoryDatabase() as unknown as Config['storage'] };
}

describe(`webhook deliveries leave at once, not at the next poll [${BACKEND}]`, () => {
  let database: PostgresDatabase | undefined;
  let service: Service;
  let receiver: WebhookReceiver;

  before(async () => {
    receiver = await startWebhookReceiver();
    if (BACKEND === 'postgres') database = await createPostgresDatabase('wum_wake', { migrated: true });
    service = await startService(configFor(database), { logger: false });
    // Untimed: the first delivery of a process loads the HTTP client and opens its connection.
    await addAndTimeDelivery(service, receiver);
  });
  after(async () => {
    await service?.close();
    await receiver?.close();
    await database?.drop();
  });

  test('a user added through this process is delivered within 2 s, the poll being 30 s', async () => {
    const took = await addAndTimeDelivery(service, receiver);
    assert.ok(took < WITHIN_MS, `delivered ${took.toFixed(0)} ms after the answer`);
  });

  test('so is one added in a request transaction (Idempotency-Key): woken after its commit', async () => {
    const took = await addAndTimeDelivery(service, receiver, { 'idempotency-key': `wake-${process.pid}-${counter}` });
    assert.ok(took < WITHIN_MS, `delivered ${took.toFixed(0)} ms after the answer`);
  });

  test('so are a name change and a deactivation (the writes that take no lock)', async () => {
    const { host, key } = await workspaceWithEndpoint(service, receiver);
    const email = `wake-changes${counter}@example.com`;
    const changes = [
      { method: 'POST' as const, url: `${API}/users`, payload: userBody(email), type: 'user.created' },
      { method: 'PATCH' as const, url: `${API}/users/${email}`, payload: { user: { first_name: 'Renamed' } }, type: 'user.updated' },
      { method: 'DELETE' as const, url: `${API}/users/${email}`, payload: undefined, type: 'user.deactivated' },
    ];
    for (const { method, url, payload, type } of changes) {
      await sleep(300);
      const before = receiver.received.length;
      const answer = await service.app.inject({ method, url, headers: { host, 'x-api-key': key }, ...(payload ? { payload } : {}) });
      assert.ok(answer.statusCode < 300, answer.body);
      const answered = performance.now();
      const [delivery] = (await receiver.waitFor(before + 1, WITHIN_MS * 3)).slice(before);
      const took = performance.now() - answered;
      assert.equal(json<'Event'>(delivery!.body).type, type);
      assert.ok(took < WITHIN_MS, `${method} delivered ${took.toFixed(0)} ms after the answer`);
    }
  });
});

if (BACKEND === 'postgres') {
  describe(`a process without a worker announces its deliveries to another's [${BACKEND}]`, () => {
    let database: PostgresDatabase;
    let writer: Service;
    let sender: Service;
    let receiver: WebhookReceiver;

    before(async () => {
      receiver = await startWebhookReceiver();
      database = await createPostgresDatabase('wum_wake_replicas', { migrated: true });
      writer = await startService(configFor(database, { WEBHOOK_WORKER: 'false' }), { logger: false });
      sender = await startService(configFor(database), { logger: false });
      const deadline = Date.now() + 10_000;
      while (!sender.listener?.connected) {
        if (Date.now() > deadline) throw new Error('the sender never listened');
        await sleep(20);
      }
      // Untimed: the first delivery of a process loads the HTTP client and opens its connection.
      await addAndTimeDelivery(writer, receiver);
    });
    after(async () => {
      await writer?.close();
      await sender?.close();
      await receiver?.close();
      await database?.drop();
    });

    test('a user added through the worker-less process is sent by the other within 2 s', async () => {
      assert.equal(writer.deliveryWorker, undefined, 'the writer runs no worker');
      const took = await addAndTimeDelivery(writer, receiver);
      assert.ok(took < WITHIN_MS, `delivered ${took.toFixed(0)} ms after the answer`);
    });

    test('many users added at once are all sent, each well before the poll', async () => {
      const { host, key } = await workspaceWithEndpoint(writer, receiver);
      await sleep(300);
      const before = receiver.received.length;
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          writer.app.inject({ method: 'POST', url: `${API}/users`, headers: { host, 'x-api-key': key }, payload: userBody(`burst${counter}-${i}@example.com`) }),
        ),
      );
      for (const answer of answers) assert.equal(answer.statusCode, 201, answer.body);
      await receiver.waitFor(before + 20, WITHIN_MS * 3);
      const took = performance.now() - started;
      assert.ok(took < WITHIN_MS * 2, `20 changes and their deliveries took ${took.toFixed(0)} ms`);
    });
  });
}
