import assert from 'node:assert/strict';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LightMyRequestResponse } from 'fastify';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { startDeliveryWorker, type DeliveryWorker } from '../../src/webhooks/delivery-worker.ts';
import { createDeliveryQueue } from '../../src/storage/deliveries.queries.ts';
import { addressRefusal } from '../../src/outbound/outbound-guard.ts';
import { BACKEND, createTestContext, testConfig, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { json } from '../helpers/json.ts';
import { assertStopsAtOnce } from '../helpers/stopped-at-once.ts';
import type { AuditEventOf } from '../helpers/audit-types.ts';

/** Short retries, so a test sees a whole schedule: three retries 100 ms apart. */
const ENV = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms',
  WEBHOOK_POLL_INTERVAL_MS: '50',
  WEBHOOK_TIMEOUT_MS: '2000',
};

interface Endpoint {
  id: string;
  url: string;
  secret?: string;
  enabled: boolean;
  disabled_reason: string | null;
  event_types: string[] | null;
}

describe(`webhooks: endpoints, signed deliveries, retries, disabling [${BACKEND}]`, () => {
  let ctx: TestContext;
  let worker: DeliveryWorker;
  let receiver: WebhookReceiver;

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, code);
  }

  const base = (ws: TestWorkspace) => `/workspaces/${ws.subdomain}/webhook-endpoints`;

  async function createEndpoint(ws: TestWorkspace, body: Record<string, unknown> = {}): Promise<Endpoint & { secret: string }> {
    const res = await ctx.admin('POST', base(ws), { url: receiver.url, ...body });
    assert.equal(res.statusCode, 201, res.body);
    return json<'createWebhookEndpoint'>(res);
  }

  async function deliveries(ws: TestWorkspace, endpoint: Endpoint) {
    const res = await ctx.admin('GET', `${base(ws)}/${endpoint.id}/deliveries`);
    assert.equal(res.statusCode, 200, res.body);
    return json<'listWebhookDeliveries'>(res).deliveries;
  }

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
      await sleep(50);
    }
  }

  /** Only the requests that carry this webhook-id. */
  const sentFor = (eventId: string) => receiver.received.filter((r) => r.headers['webhook-id'] === eventId);

  before(async () => {
    ctx = await createTestContext(ENV);
    await ctx.seedProducts();
    receiver = await startWebhookReceiver();
    worker = startDeliveryWorker({ queue: createDeliveryQueue(ctx.database.db), store: ctx.store, config: ctx.config.webhooks, log: ctx.app.log, registry: new Registry() });
  });
  after(async () => {
    await worker.stop();
    await receiver.close();
    await ctx.close();
  });

  test('create → 201 with a whsec_ secret shown once; list and get never show it; the change is audited without it', async () => {
    const ws = await ctx.createWorkspace('wh');
    const created = await createEndpoint(ws, { description: 'Billing seats', event_types: ['user.created'] });
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(created.enabled, true);
    assert.deepEqual(created.event_types, ['user.created']);
    const listed = await ctx.admin('GET', base(ws));
    assert.equal(listed.statusCode, 200);
    assert.deepEqual(json<'listWebhookEndpoints'>(listed).webhook_endpoints.map((e) => e.id), [created.id]);
    const got = await ctx.admin('GET', `${base(ws)}/${created.id}`);
    assert.equal(got.statusCode, 200);
    for (const body of [listed.body, got.body]) assert.ok(!body.includes(created.secret) && !body.includes('"secret"'), body);
    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?action=webhook_endpoint.created`);
    assert.equal(json<'listWorkspaceAuditEvents'>(audit).audit_events.length, 1);
    assert.ok(!audit.body.includes(created.secret));
  });

  test('a user change is POSTed as its event, signed by the official standardwebhooks package', async () => {
    const ws = await ctx.createWorkspace('wh');
    const endpoint = await createEndpoint(ws);
    const added = await ctx.api(ws, 'POST', '/users', { body: userBody('signed@example.com') });
    assert.equal(added.statusCode, 201);
    const event = json<'listEvents'>(await ctx.api(ws, 'GET', '/events')).events[0]!;
    const [delivery] = await until('the delivery', async () => sentFor(event.id), (r) => r.length >= 1);
    const verified = new Webhook(endpoint.secret).verify(delivery!.body, delivery!.headers as Record<string, string>);
    assert.deepEqual(verified, event, 'the body is the event exactly as GET /events lists it');
    assert.equal(delivery!.headers['content-type'], 'application/json');
    assert.match(delivery!.headers['webhook-timestamp'] as string, /^\d+$/);
    assert.deepEqual((verified as { data: { user: unknown } }).data.user, json<'addUser'>(added));
    assert.throws(() => new Webhook('whsec_' + Buffer.alloc(32, 1).toString('base64')).verify(delivery!.body, delivery!.headers as Record<string, string>));
    const [row] = await until('a succeeded delivery', () => deliveries(ws, endpoint), (d) => d[0]?.status === 'succeeded');
    assert.equal(row!.event_id, event.id);
    assert.equal(row!.attempts, 1);
    assert.equal(row!.attempt_log[0]!.response_status, 204);
  });

  test('a receiver that fails, then succeeds: retried with the same webhook-id; every attempt listed', async () => {
    const ws = await ctx.createWorkspace('wh');
    const endpoint = await createEndpoint(ws);
    receiver.respondWith(503, 500, 204);
    await ctx.api(ws, 'POST', '/users', { body: userBody('retry@example.com') });
    const event = json<'listEvents'>(await ctx.api(ws, 'GET', '/events')).events[0]!;
    const [row] = await until('a succeeded delivery', () => deliveries(ws, endpoint), (d) => d[0]?.status === 'succeeded');
    receiver.respondWith(204);
    assert.deepEqual(row!.attempt_log.map((a) => a.response_status), [503, 500, 204]);
    assert.equal(row!.attempts, 3);
    const sent = sentFor(event.id);
    assert.equal(sent.length, 3);
    assert.deepEqual(sent.map((r) => r.status), [503, 500, 204]);
    for (const r of sent) new Webhook(endpoint.secret).verify(r.body, r.headers as Record<string, string>);
  });

  test('redeliver: sent again with the same webhook-id; 404 for an unknown delivery', async () => {
    const ws = await ctx.createWorkspace('wh');
    const endpoint = await createEndpoint(ws);
    await ctx.api(ws, 'POST', '/users', { body: userBody('again@example.com') });
    const [row] = await until('a succeeded delivery', () => deliveries(ws, endpoint), (d) => d[0]?.status === 'succeeded');
    const res = await ctx.admin('POST', `${base(ws)}/${endpoint.id}/deliveries/${row!.id}/redeliver`);
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(json<'redeliverWebhook'>(res).status, 'pending');
    await until('a second request', async () => sentFor(row!.event_id), (r) => r.length >= 2);
    const [after] = await until('the redelivery recorded', () => deliveries(ws, endpoint), (d) => d[0]?.status === 'succeeded' && d[0].attempt_log.length === 2);
    assert.equal(after!.attempts, 1);
    assertProblem(await ctx.admin('POST', `${base(ws)}/${endpoint.id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`), 404, 'webhook_delivery_not_found');
    assertProblem(await ctx.admin('POST', `${base(ws)}/${endpoint.id}/deliveries/nope/redeliver`), 404, 'webhook_delivery_not_found');
    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?action=webhook_delivery.redelivered`);
    assert.equal(json<'listWorkspaceAuditEvents'>(audit).audit_events.length, 1);
  });

  test('an endpoint whose delivery uses up the retry schedule is disabled, and that is audited; enabling resumes it', async () => {
    const ws = await ctx.createWorkspace('wh');
    const failing = await startWebhookReceiver();
    try {
      failing.respondWith(500);
      const created = await ctx.admin('POST', base(ws), { url: failing.url });
      const endpoint: Endpoint = json<'createWebhookEndpoint'>(created);
      await ctx.api(ws, 'POST', '/users', { body: userBody('doomed@example.com') });
      const [row] = await until('a failed delivery', () => deliveries(ws, endpoint), (d) => d[0]?.status === 'failed');
      assert.equal(row!.attempts, 4, 'the first attempt and the three retries');
      const disabled: Endpoint = (
        await until('the endpoint disabled', async () => json<'getWebhookEndpoint'>(await ctx.admin('GET', `${base(ws)}/${endpoint.id}`)), (e) => !e.enabled)
      );
      assert.equal(disabled.disabled_reason, 'failing');
      const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?action=webhook_endpoint.disabled`);
      const entry = json<{ audit_events: Array<AuditEventOf<Endpoint>> }>(audit).audit_events[0]!;
      assert.equal(entry.actor_type, 'system');
      assert.equal(entry.target_id, endpoint.id);
      assert.equal(entry.before!.enabled, true);
      assert.equal(entry.after!.enabled, false);

      // While disabled: no delivery is made for new events, and redelivery is refused.
      await ctx.api(ws, 'POST', '/users', { body: userBody('unseen@example.com') });
      assert.equal((await deliveries(ws, endpoint)).length, 1);
      assertProblem(await ctx.admin('POST', `${base(ws)}/${endpoint.id}/deliveries/${row!.id}/redeliver`), 409, 'webhook_endpoint_disabled');

      failing.respondWith(204);
      const enabled = await ctx.admin('PATCH', `${base(ws)}/${endpoint.id}`, { enabled: true });
      assert.equal(enabled.statusCode, 200, enabled.body);
      assert.equal(json<'updateWebhookEndpoint'>(enabled).disabled_reason, null);
      assert.equal((await ctx.admin('POST', `${base(ws)}/${endpoint.id}/deliveries/${row!.id}/redeliver`)).statusCode, 202);
      await until('the redelivery', () => deliveries(ws, endpoint), (d) => d[0]?.status === 'succeeded');
    } finally {
      await failing.close();
    }
  });

  test('rotate: a new secret shown once; for 24 h deliveries verify with the new and the old secret', async () => {
    const ws = await ctx.createWorkspace('wh');
    const endpoint = await createEndpoint(ws);
    const rotated = await ctx.admin('POST', `${base(ws)}/${endpoint.id}/rotate-secret`);
    assert.equal(rotated.statusCode, 200, rotated.body);
    const { secret, previous_secret_expires_at: expires } = json<'rotateWebhookSecret'>(rotated);
    assert.match(secret, /^whsec_/);
    assert.notEqual(secret, endpoint.secret);
    const hours = (Date.parse(expires!) - Date.now()) / 3_600_000;
    assert.ok(hours > 23.9 && hours <= 24, `old secret valid for 24 h, got ${hours}`);
    await ctx.api(ws, 'POST', '/users', { body: userBody('rotated@example.com') });
    const event = json<'listEvents'>(await ctx.api(ws, 'GET', '/events')).events[0]!;
    const [delivery] = await until('the delivery', async () => sentFor(event.id), (r) => r.length >= 1);
    const headers = delivery!.headers as Record<string, string>;
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    new Webhook(secret).verify(delivery!.body, headers);
    new Webhook(endpoint.secret).verify(delivery!.body, headers);
    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?action=webhook_endpoint.secret_rotated`);
    assert.equal(json<'listWorkspaceAuditEvents'>(audit).audit_events.length, 1);
    assert.ok(!audit.body.includes(secret));
  });

  test('event_types: only the chosen types are delivered', async () => {
    const ws = await ctx.createWorkspace('wh');
    const endpoint = await createEndpoint(ws, { event_types: ['user.deactivated'] });
    await ctx.api(ws, 'POST', '/users', { body: userBody('owner@example.com', { role: 'owner' }) });
    await ctx.api(ws, 'POST', '/users', { body: userBody('leaver@example.com') });
    assert.equal((await ctx.api(ws, 'DELETE', '/users/leaver@example.com')).statusCode, 204);
    const [row] = await until('the delivery', () => deliveries(ws, endpoint), (d) => d[0]?.status === 'succeeded');
    const all = await deliveries(ws, endpoint);
    assert.equal(all.length, 1);
    const event = json<'listEvents'>(await ctx.api(ws, 'GET', '/events', { query: { after: '2' } })).events[0]!;
    assert.equal(event.type, 'user.deactivated');
    assert.equal(row!.event_id, event.id);
  });

  test('update and delete: PATCH changes the fields given, DELETE → 204 and then 404; audited', async () => {
    const ws = await ctx.createWorkspace('wh');
    const endpoint = await createEndpoint(ws);
    const patched = await ctx.admin('PATCH', `${base(ws)}/${endpoint.id}`, { description: 'New', event_types: null, url: `${receiver.url}?v=2` });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(json<'updateWebhookEndpoint'>(patched).url, `${receiver.url}?v=2`);
    assert.equal(json<'updateWebhookEndpoint'>(patched).description, 'New');
    assertProblem(await ctx.admin('PATCH', `${base(ws)}/${endpoint.id}`, { url: 'https://10.0.0.7/hook' }), 400, 'validation_failed');
    assertProblem(await ctx.admin('PATCH', `${base(ws)}/${endpoint.id}`, { secret: 'whsec_x' }), 400, 'validation_failed');
    assert.equal((await ctx.admin('DELETE', `${base(ws)}/${endpoint.id}`)).statusCode, 204);
    assertProblem(await ctx.admin('GET', `${base(ws)}/${endpoint.id}`), 404, 'webhook_endpoint_not_found');
    assertProblem(await ctx.admin('DELETE', `${base(ws)}/${endpoint.id}`), 404, 'webhook_endpoint_not_found');
    assertProblem(await ctx.admin('GET', `${base(ws)}/not-a-uuid/deliveries`), 404, 'webhook_endpoint_not_found');
    assertProblem(await ctx.admin('GET', `/workspaces/nobody-here/webhook-endpoints`), 404, 'workspace_not_found');
    const audit = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?target_id=${endpoint.id}`);
    assert.deepEqual(json<'listWorkspaceAuditEvents'>(audit).audit_events.map((e) => e.action), [
      'webhook_endpoint.created',
      'webhook_endpoint.updated',
      'webhook_endpoint.deleted',
    ]);
  });

  test('SSRF: non-https, private, loopback, link-local and metadata addresses are refused with 400 and nothing stored', async () => {
    const ws = await ctx.createWorkspace('ssrf');
    const strict = await ctx.buildApp({ WEBHOOK_ALLOW_HTTP: 'false' });
    const post = (app: typeof strict, url: string) =>
      app.inject({ method: 'POST', url: `/admin/v1${base(ws)}`, headers: { authorization: `Bearer ${ctx.config.adminToken}` }, payload: { url } });
    for (const url of [
      'http://127.0.0.1:9/hook',
      'https://127.0.0.1/hook',
      'https://localhost/hook',
      'https://10.0.0.1/hook',
      'https://192.168.1.10/hook',
      'https://172.16.0.1/hook',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::1]/hook',
      'https://[fd00:ec2::254]/hook',
      'https://[::ffff:10.0.0.1]/hook',
      'https://100.64.0.1/hook',
      'https://0.0.0.0/hook',
      'ftp://example.com/hook',
      'https://user:pass@127.0.0.1/hook',
      'not a url',
    ]) {
      const res = await post(strict, url);
      assertProblem(res, 400, 'validation_failed');
      assert.equal(json<'Problem'>(res).errors![0]!.field, 'url', url);
    }
    // With WEBHOOK_ALLOW_HTTP, http goes to loopback only.
    for (const url of ['http://10.1.2.3/hook', 'http://192.0.2.1/hook']) assertProblem(await post(ctx.app, url), 400, 'validation_failed');
    assert.deepEqual(json<'listWebhookEndpoints'>(await ctx.admin('GET', base(ws))).webhook_endpoints, []);
    // An allow-list admits a network that is not public (https), and a public address needs none.
    const allowed = await ctx.buildApp({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' });
    assert.equal((await post(allowed, 'https://127.0.0.1:9/hook')).statusCode, 201);
    // The one setting of every outbound connection opens it too (WEBHOOK_ALLOWED_NETWORKS is its older name).
    const outbound = await ctx.buildApp({ OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
    assert.equal((await post(outbound, 'https://127.0.0.1:9/hook')).statusCode, 201);
    assertProblem(await post(outbound, 'https://127.0.0.2:9/hook'), 400, 'validation_failed');
    // A public address passes the rules (checked without creating anything that could send to it).
    assert.equal(addressRefusal('93.184.215.14', 'https:', { allowHttp: false, allowedNetworks: [] }), undefined);
  });

  test('SSRF: IPv6 spellings of an IPv4 address (compatible, mapped, translated, NAT64) are refused, whatever the allow-list', async () => {
    const ws = await ctx.createWorkspace('ssrf');
    const open = await ctx.buildApp({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::/0' });
    for (const url of ['https://[::127.0.0.1]/hook', 'https://[::7f00:1]/hook', 'https://[::10.0.0.1]/hook', 'https://[::ffff:127.0.0.1]/hook', 'https://[::ffff:0:127.0.0.1]/hook', 'https://[64:ff9b::127.0.0.1]/hook']) {
      const res = await open.inject({ method: 'POST', url: `/admin/v1${base(ws)}`, headers: { authorization: `Bearer ${ctx.config.adminToken}` }, payload: { url } });
      assertProblem(res, 400, 'validation_failed');
      assert.match(json<'Problem'>(res).errors![0]!.message, /IPv6 form of an IPv4 address/, url);
    }
    assert.equal((await open.inject({ method: 'POST', url: `/admin/v1${base(ws)}`, headers: { authorization: `Bearer ${ctx.config.adminToken}` }, payload: { url: 'https://127.0.0.1:9/hook' } })).statusCode, 201);
  });

  test('the test harness keeps webhooks on the machine: with WEBHOOK_LOOPBACK_ONLY nothing outside loopback is accepted, whatever else allows it', async () => {
    const ws = await ctx.createWorkspace('loopback');
    const app = await ctx.buildApp({ WEBHOOK_ALLOWED_NETWORKS: '0.0.0.0/0' });
    assert.equal(ctx.config.webhooks.loopbackOnly, true);
    for (const url of ['https://10.9.8.7/hook', 'https://[fd00::7]/hook']) {
      const res = await app.inject({ method: 'POST', url: `/admin/v1${base(ws)}`, headers: { authorization: `Bearer ${ctx.config.adminToken}` }, payload: { url } });
      assertProblem(res, 400, 'validation_failed');
      assert.match(json<'Problem'>(res).errors![0]!.message, /WEBHOOK_LOOPBACK_ONLY/, url);
    }
    assert.match(addressRefusal('192.0.2.1', 'https:', ctx.config.webhooks) ?? '', /outside loopback/);
    assert.equal(addressRefusal('127.0.0.2', 'http:', ctx.config.webhooks), undefined);
  });

  test('SSRF at delivery time: a worker whose rules refuse the address sends nothing and records why', async () => {
    const ws = await ctx.createWorkspace('ssrf');
    const endpoint = await createEndpoint(ws);
    await worker.stop();
    const strictConfig = testConfig({ ...ENV, WEBHOOK_ALLOW_HTTP: 'false' }).webhooks;
    const strict = startDeliveryWorker({ queue: createDeliveryQueue(ctx.database.db), store: ctx.store, config: strictConfig, log: ctx.app.log, registry: new Registry() });
    try {
      await ctx.api(ws, 'POST', '/users', { body: userBody('guarded@example.com') });
      const event = json<'listEvents'>(await ctx.api(ws, 'GET', '/events')).events[0]!;
      const [row] = await until('a refused attempt', () => deliveries(ws, endpoint), (d) => (d[0]?.attempt_log.length ?? 0) >= 1);
      assert.equal(row!.attempt_log[0]!.response_status, null);
      assert.match(row!.attempt_log[0]!.error!, /https/);
      assert.equal(sentFor(event.id).length, 0);
    } finally {
      await strict.stop();
      worker = startDeliveryWorker({ queue: createDeliveryQueue(ctx.database.db), store: ctx.store, config: ctx.config.webhooks, log: ctx.app.log, registry: new Registry() });
    }
  });

  test('an attempt without an answer ends at WEBHOOK_TIMEOUT_MS; an answer\'s status counts, however long or slow its body', async () => {
    const ws = await ctx.createWorkspace('slow');
    // /silent takes the request and never answers; /stalled sends its status and part of a body,
    // then nothing; /long answers 200 with 4 MiB, far past what a sender reads of an answer.
    const receivers = createNetServer((socket) => {
      socket.once('data', (request: Buffer) => {
        const path = / (\/\w+) /.exec(request.toString('latin1'))?.[1];
        if (path === '/stalled') socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial');
        if (path === '/long') {
          const body = Buffer.alloc(4 * 1024 * 1024, 'x');
          socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n`);
          socket.write(body);
        }
      });
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => receivers.listen(0, '127.0.0.1', resolve));
    const at = (path: string) => `http://127.0.0.1:${(receivers.address() as AddressInfo).port}${path}`;
    const endpoints: Record<string, Endpoint> = {};
    for (const path of ['/silent', '/stalled', '/long']) {
      const created = await ctx.admin('POST', base(ws), { url: at(path) });
      assert.equal(created.statusCode, 201, created.body);
      endpoints[path] = json<'createWebhookEndpoint'>(created);
    }
    await worker.stop();
    const quick = startDeliveryWorker({
      queue: createDeliveryQueue(ctx.database.db),
      store: ctx.store,
      config: testConfig({ ...ENV, WEBHOOK_TIMEOUT_MS: '300' }).webhooks,
      log: ctx.app.log,
      registry: new Registry(),
    });
    try {
      await ctx.api(ws, 'POST', '/users', { body: userBody('slow@example.com') });
      const [silent] = await until('two attempts to /silent', () => deliveries(ws, endpoints['/silent']!), (d) => (d[0]?.attempt_log.length ?? 0) >= 2);
      for (const attempt of silent!.attempt_log.slice(0, 2)) {
        assert.equal(attempt.response_status, null);
        assert.equal(attempt.error, 'no answer within 300 ms');
        assert.ok(attempt.duration_ms >= 290 && attempt.duration_ms < 2_000, `attempt took ${attempt.duration_ms} ms`);
      }
      for (const path of ['/stalled', '/long']) {
        const [row] = await until(`the answer of ${path} recorded`, () => deliveries(ws, endpoints[path]!), (d) => d[0]?.status === 'succeeded');
        assert.equal(row!.attempts, 1, path);
        assert.equal(row!.attempt_log[0]!.response_status, 200, path);
        assert.equal(row!.attempt_log[0]!.error, null, path);
      }
    } finally {
      await quick.stop();
      receivers.close();
      worker = startDeliveryWorker({ queue: createDeliveryQueue(ctx.database.db), store: ctx.store, config: ctx.config.webhooks, log: ctx.app.log, registry: new Registry() });
    }
  });

  test('a worker stopped while it claims stops then, not after its next poll', async () => {
    // Stopped at once: its first claim is still in flight, and its next poll is a minute away
    // (the longest WEBHOOK_POLL_INTERVAL_MS). A graceful shutdown must not wait for it.
    const slow = { ...ctx.config.webhooks, pollIntervalMs: 60_000 };
    await assertStopsAtOnce(() => startDeliveryWorker({ queue: createDeliveryQueue(ctx.database.db), store: ctx.store, config: slow, log: ctx.app.log, registry: new Registry() }));
  });

  test('another workspace\'s endpoints are out of reach', async () => {
    const a = await ctx.createWorkspace('wh');
    const b = await ctx.createWorkspace('wh');
    const endpoint = await createEndpoint(a);
    assertProblem(await ctx.admin('GET', `${base(b)}/${endpoint.id}`), 404, 'webhook_endpoint_not_found');
    assertProblem(await ctx.admin('DELETE', `${base(b)}/${endpoint.id}`), 404, 'webhook_endpoint_not_found');
    assertProblem(await ctx.admin('GET', `${base(b)}/${endpoint.id}/deliveries`), 404, 'webhook_endpoint_not_found');
    await ctx.api(b, 'POST', '/users', { body: userBody('b-only@example.com') });
    await sleep(300);
    assert.equal((await deliveries(a, endpoint)).length, 0, 'b\'s events are not sent to a\'s endpoint');
  });
  test('a burst of changes to two endpoints: every delivery succeeds, and every send is recorded as one attempt', async () => {
    const ws = await ctx.createWorkspace('wh');
    const endpoints = [await createEndpoint(ws), await createEndpoint(ws)];
    const added = await Promise.all(
      Array.from({ length: 20 }, (_, i) => ctx.api(ws, 'POST', '/users', { body: userBody(`burst-${i}@example.com`) })),
    );
    assert.deepEqual(added.map((r) => r.statusCode), Array(20).fill(201));
    const events = json<'listEvents'>(await ctx.api(ws, 'GET', '/events?limit=100')).events;
    assert.equal(events.length, 20);
    const attempts = new Map<string, number>();
    for (const endpoint of endpoints) {
      const rows = await until('20 succeeded deliveries', () => deliveries(ws, endpoint), (d) => d.length === 20 && d.every((r) => r.status === 'succeeded'));
      assert.deepEqual(new Set(rows.map((r) => r.event_id)), new Set(events.map((e) => e.id)));
      for (const row of rows) {
        assert.equal(row.attempt_log.length, row.attempts);
        assert.equal(row.attempt_log.at(-1)!.response_status, 204);
        attempts.set(row.event_id, (attempts.get(row.event_id) ?? 0) + row.attempts);
      }
    }
    // A timeout on a loaded machine may retry a delivery; then both sends are in its log.
    for (const event of events) assert.equal(sentFor(event.id).length, attempts.get(event.id), 'each send is one recorded attempt');
  });
});
