import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { startTestStreamWorker, type TestStreamWorker } from '../helpers/stream-worker.ts';
import { createDeliveryQueue } from '../../src/storage/deliveries.queries.ts';
import { startDeliveryWorker, type DeliveryWorker } from '../../src/webhooks/delivery-worker.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { startJsonLinesReceiver, startSplunkHecReceiver, type StreamReceiver } from '../../harness/stream-receivers.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { json } from '../helpers/json.ts';

/*
 * Audit streams (docs/api.md, "Audit streams"): the routes on both hosts, write-only and
 * encrypted credentials, the outbound guard, every change audited; and the worker of this
 * process sending to a JSON Lines receiver and a strict Splunk HEC on 127.0.0.1 (plain http to
 * loopback, WEBHOOK_ALLOW_HTTP): rows in audit order, a destination down then back, the pause
 * after AUDIT_STREAM_PAUSE_AFTER (its audit row, metric, and `audit_stream.paused` event in the
 * feed and at a webhook receiver on 127.0.0.1) and the resume, a replay, a test send.
 */

const ENV = { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_TIMEOUT_MS: '2000', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' };
const HEC_TOKEN = 'b7c3e1f0-hec-token-for-tests';
/** Short, so the pause comes within the test (the check runs every 2 s). */
const PAUSE_AFTER_MS = 1500;

interface WireStream {
  id: string;
  workspace: string | null;
  status: string;
  cursor: number;
  lag_rows: number;
  last_error: string | null;
  failing_since: string | null;
  last_delivered_at: string | null;
  destination: Record<string, unknown>;
  secret?: string;
}

describe(`audit streams [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  let jsonl: StreamReceiver;
  let hec: StreamReceiver;
  let worker: TestStreamWorker | undefined;
  let webhooks: WebhookReceiver;
  let deliveries: DeliveryWorker;
  const registry = new Registry();

  before(async () => {
    ctx = await createTestContext(ENV);
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('streams');
    jsonl = await startJsonLinesReceiver();
    hec = await startSplunkHecReceiver(HEC_TOKEN);
    webhooks = await startWebhookReceiver();
    deliveries = startDeliveryWorker({ queue: createDeliveryQueue(ctx.database.db), store: ctx.store, config: ctx.config.webhooks, log: ctx.app.log, registry: new Registry() });
  });
  after(async () => {
    await deliveries?.stop();
    await webhooks?.close();
    await worker?.stop();
    await jsonl?.close();
    await hec?.close();
    await ctx?.close();
  });

  function startWorker(): void {
    worker = startTestStreamWorker(ctx, { timeoutMs: 2000, pauseAfterMs: PAUSE_AFTER_MS, registry });
  }

  function assertProblem(res: LightMyRequestResponse, status: number, code: string): void {
    assert.equal(res.statusCode, status, res.body);
    assert.match(res.headers['content-type'] as string, /^application\/problem\+json/);
    assert.equal(json<'Problem'>(res).code, code);
  }

  const own = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown) =>
    ctx.api(ws, method, `/audit-streams${path}`, body === undefined ? {} : { body });

  async function create(body: Record<string, unknown>): Promise<WireStream> {
    const res = await own('POST', '', { name: 'SIEM', format: 'json', ...body });
    assert.equal(res.statusCode, 201, res.body);
    return res.json();
  }

  async function stream(id: string): Promise<WireStream> {
    const res = await own('GET', `/${id}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  }

  async function until<T>(what: string, read: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
      await sleep(100);
    }
  }

  async function auditActions(): Promise<string[]> {
    const res = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`);
    assert.equal(res.statusCode, 200, res.body);
    return (json<'listWorkspaceAuditEvents'>(res).audit_events as Array<{ action: string }>).map((e) => e.action);
  }

  /** The workspace's events after `after` (GET /events), and the sequence to continue from. */
  async function feed(after: number): Promise<{ events: Array<{ id: string; type: string; actor: unknown; data: unknown }>; after: number }> {
    const res = await ctx.api(ws, 'GET', `/events?after=${after}&limit=1000`);
    assert.equal(res.statusCode, 200, res.body);
    const page = json<'listEvents'>(res);
    return { events: page.events, after: page.next_after };
  }

  async function addUsers(prefix: string, n: number): Promise<void> {
    for (let i = 0; i < n; i += 1) {
      const res = await ctx.api(ws, 'POST', '/users', { body: userBody(`${prefix}${i}@example.com`) });
      assert.equal(res.statusCode, 201, res.body);
    }
  }

  test('create: 201, an https stream\'s secret shown once; credentials never answered and encrypted at rest; audited', async () => {
    const https = await create({ destination: { type: 'https', url: jsonl.url } });
    assert.match(https.secret!, /^whsec_/);
    assert.equal(https.workspace, ws.subdomain);
    assert.equal(https.status, 'active');
    assert.equal(https.lag_rows, 1, 'its own audit_stream.created row is the first it sends');
    const again = await stream(https.id);
    assert.equal(again.secret, undefined);
    assert.ok(!JSON.stringify(again).includes(https.secret!.slice(6)));

    const splunk = await create({ name: 'Splunk', destination: { type: 'splunk_hec', url: hec.url, token: HEC_TOKEN } });
    assert.deepEqual(splunk.destination, { type: 'splunk_hec', url: hec.url, token_set: true });
    const listed = await own('GET', '');
    assert.equal(listed.statusCode, 200);
    assert.ok(!listed.body.includes(HEC_TOKEN), 'the token is never answered');
    const stored = (await ctx.database.db.execute(sql`select credentials from audit_streams where id = ${splunk.id}::uuid`)) as unknown as { rows: Array<{ credentials: string }> };
    assert.match(stored.rows[0]!.credentials, /^v1:[0-9a-f]{8}:/);
    assert.ok(!stored.rows[0]!.credentials.includes(HEC_TOKEN));

    const s3 = await create({
      name: 'Bucket',
      destination: { type: 's3', endpoint: 'http://127.0.0.1:9', region: 'eu-west-1', bucket: 'audit', prefix: 'wum/', access_key_id: 'AKIATEST', secret_access_key: 'very-secret-key' },
    });
    assert.equal(s3.destination.secret_access_key_set, true);
    assert.ok(!JSON.stringify(s3).includes('very-secret-key'));
    const syslog = await create({ name: 'Syslog', destination: { type: 'syslog', host: '127.0.0.1', port: 6514 } });
    assert.deepEqual(syslog.destination, { type: 'syslog', host: '127.0.0.1', port: 6514 });
    for (const id of [s3.id, syslog.id]) assert.equal((await own('DELETE', `/${id}`)).statusCode, 204);
    assert.equal((await own('GET', `/${s3.id}`)).statusCode, 404);

    const actions = await auditActions();
    assert.equal(actions.filter((a) => a === 'audit_stream.created').length, 4);
    assert.equal(actions.filter((a) => a === 'audit_stream.deleted').length, 2);
    for (const id of [https.id, splunk.id]) assert.equal((await own('DELETE', `/${id}`)).statusCode, 204);
  });

  test('bad input is a 4xx problem: unknown type, missing token, refused address, plain http off loopback, an unknown format', async () => {
    assertProblem(await own('POST', '', { name: 'x', format: 'json', destination: { type: 'kafka', url: 'https://a.example' } }), 400, 'validation_failed');
    assertProblem(await own('POST', '', { name: 'x', format: 'json', destination: { type: 'splunk_hec', url: hec.url } }), 400, 'validation_failed');
    assertProblem(await own('POST', '', { name: 'x', format: 'json', destination: { type: 'syslog', host: '127.0.0.1', port: 0 } }), 400, 'validation_failed');
    const refused = await own('POST', '', { name: 'x', format: 'json', destination: { type: 'https', url: 'https://10.1.2.3/audit' } });
    assertProblem(refused, 400, 'validation_failed');
    assert.equal(json<'Problem'>(refused).errors![0]!.field, 'destination.url');
    assertProblem(await own('POST', '', { name: 'x', format: 'json', destination: { type: 'syslog', host: '169.254.169.254', port: 6514 } }), 400, 'validation_failed');
    assertProblem(await own('POST', '', { name: 'x', format: 'cef', destination: { type: 'https', url: jsonl.url } }), 400, 'validation_failed');
    assertProblem(await own('POST', '/00000000-0000-4000-8000-000000000000/replay', { from: 'yesterday' }), 400, 'validation_failed');
    assertProblem(await own('PATCH', '/nope', { name: 'y' }), 404, 'audit_stream_not_found');
    const app = await ctx.buildApp({ WEBHOOK_ALLOW_HTTP: 'false' });
    const noHttp = await app.inject({
      method: 'POST',
      url: '/api/external/v2/audit-streams',
      headers: { host: ws.host, 'x-api-key': ws.apiKey },
      payload: { name: 'x', format: 'json', destination: { type: 'https', url: jsonl.url } },
    });
    assertProblem(noHttp, 400, 'validation_failed');
  });

  test('the scope audit:write opens the routes; audit:read alone does not', async () => {
    const made = await ctx.admin('POST', `/workspaces/${ws.subdomain}/api-keys`, { name: 'reader', scopes: ['audit:read'] });
    assert.equal(made.statusCode, 201, made.body);
    const reader = { ...ws, apiKey: json<'createApiKey'>(made).key as string };
    const res = await ctx.api(reader, 'GET', '/audit-streams');
    assertProblem(res, 403, 'insufficient_scope');
  });

  test('the operator: a stream of every workspace (workspace null), not seen on a workspace\'s host; an unknown workspace is 404', async () => {
    const res = await ctx.admin('POST', '/audit-streams', { name: 'All', format: 'json', workspace: null, destination: { type: 'https', url: jsonl.url } });
    assert.equal(res.statusCode, 201, res.body);
    const all = json<'createAuditStream'>(res) as WireStream;
    assert.equal(all.workspace, null);
    assert.equal((await own('GET', `/${all.id}`)).statusCode, 404);
    assert.ok(!(await own('GET', '')).body.includes(all.id));
    assertProblem(await ctx.admin('POST', '/audit-streams', { name: 'x', format: 'json', workspace: 'nope-nope', destination: { type: 'https', url: jsonl.url } }), 404, 'workspace_not_found');
    const named = await ctx.admin('POST', '/audit-streams', { name: 'One', format: 'json', workspace: ws.subdomain, destination: { type: 'https', url: jsonl.url } });
    assert.equal(named.statusCode, 201, named.body);
    assert.equal((await own('GET', `/${json<'createAuditStream'>(named).id}`)).statusCode, 200, 'the workspace sees the stream the operator made for it');
    assert.equal(json<'listAuditStreams'>(await ctx.admin('GET', '/audit-streams')).audit_streams.length >= 2, true);
    for (const id of [all.id, json<'createAuditStream'>(named).id]) assert.equal((await ctx.admin('DELETE', `/audit-streams/${id}`)).statusCode, 204);
  });

  test('rows arrive in audit order, each exactly as GET /audit-events lists it, signed (https) and as strict HEC events (splunk_hec)', { timeout: 60_000 }, async () => {
    const https = await create({ destination: { type: 'https', url: jsonl.url } });
    const splunk = await create({ name: 'Splunk', destination: { type: 'splunk_hec', url: hec.url, token: HEC_TOKEN } });
    jsonl.received.length = 0;
    hec.received.length = 0;
    startWorker();
    await addUsers('order', 12);
    const listing = await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`);
    const expected = (json<'listWorkspaceAuditEvents'>(listing).audit_events as Array<{ id: number }>).filter((e) => e.id > https.cursor).sort((a, b) => a.id - b.id);
    assert.ok(expected.length >= 12);
    const got = await until('every row at the https receiver', () => jsonl.rows(), (rows) => rows.length >= expected.length);
    assert.deepEqual(got, expected, 'the same rows, in audit id order, as the listing shows them');
    const expectedAtHec = expected.filter((e) => e.id > splunk.cursor);
    const fromHec = await until('every row at the HEC', () => hec.rows(), (rows) => rows.length >= expectedAtHec.length);
    assert.deepEqual(fromHec, expectedAtHec);
    // Standard Webhooks' verify() parses the body as one JSON value; a batch is JSON Lines, so the signature is checked as it does.
    for (const batch of jsonl.received) {
      const at = new Date(Number(batch.headers['webhook-timestamp']) * 1000);
      assert.equal(batch.headers['webhook-signature'], new Webhook(https.secret!).sign(batch.headers['webhook-id'] as string, at, batch.body));
    }
    assert.ok(jsonl.received.every((b) => /^ast_/.test(b.headers['webhook-id'] as string)));
    assert.ok(hec.received.every((b) => b.status === 200), 'the strict HEC accepted every batch');
    const health = await until('the stream caught up', () => stream(https.id), (s) => s.lag_rows === 0 && s.last_delivered_at !== null);
    assert.equal(health.status, 'active');
    assert.equal(health.cursor, expected.at(-1)!.id);
    for (const id of [https.id, splunk.id]) assert.equal((await own('DELETE', `/${id}`)).statusCode, 204);
  });

  test('a destination down for a while, then back: failing with last_error, then every row, nothing lost', { timeout: 60_000 }, async () => {
    const splunk = await create({ name: 'Flaky', destination: { type: 'splunk_hec', url: hec.url, token: HEC_TOKEN } });
    hec.received.length = 0;
    hec.down(true);
    await addUsers('down', 5);
    const failing = await until('the stream failing', () => stream(splunk.id), (s) => s.status === 'failing');
    assert.match(failing.last_error!, /503/);
    assert.ok(failing.lag_rows >= 5);
    hec.down(false);
    await addUsers('back', 3);
    const healthy = await until('the stream active again', () => stream(splunk.id), (s) => s.status === 'active' && s.lag_rows === 0, 30_000);
    assert.equal(healthy.last_error, null);
    const ids = hec.rows().map((r) => r.id as number);
    const unique = [...new Set(ids)];
    assert.deepEqual(unique, [...unique].sort((a, b) => a - b), 'in audit order');
    const listed = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`)).audit_events as Array<{ id: number }>;
    assert.deepEqual(unique, listed.map((e) => e.id).filter((id) => id > splunk.cursor && id <= healthy.cursor));
    assert.equal((await own('DELETE', `/${splunk.id}`)).statusCode, 204);
  });

  test('failing for AUDIT_STREAM_PAUSE_AFTER pauses it: audited by the system, counted, an audit_stream.paused event in the feed and to a webhook; resuming continues from the cursor', { timeout: 60_000 }, async () => {
    const hook = await ctx.admin('POST', `/workspaces/${ws.subdomain}/webhook-endpoints`, { url: webhooks.url, event_types: ['audit_stream.paused'] });
    assert.equal(hook.statusCode, 201, hook.body);
    const { after: feedBefore } = await feed(0);
    const s = await create({ name: 'Paused', destination: { type: 'splunk_hec', url: hec.url, token: HEC_TOKEN } });
    hec.received.length = 0;
    hec.down(true);
    // An operator's stream of every workspace fails and is paused too: it has no workspace feed.
    const everyone = await ctx.admin('POST', '/audit-streams', { name: 'All', format: 'json', workspace: null, destination: { type: 'splunk_hec', url: hec.url, token: HEC_TOKEN } });
    assert.equal(everyone.statusCode, 201, everyone.body);
    const all = everyone.json() as WireStream;
    await addUsers('pause', 2);
    const failingAt = Date.now();
    await until('the stream failing', () => stream(s.id), (x) => x.status === 'failing');
    const paused = await until('the stream paused', () => stream(s.id), (x) => x.status === 'paused', 20_000);
    assert.ok(Date.now() - failingAt < PAUSE_AFTER_MS + 10_000, 'paused within 10 s of the threshold');
    assert.ok(paused.last_error);
    const events = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`)).audit_events as Array<{ action: string; actor_type: string; target_id: string }>;
    assert.ok(events.some((e) => e.action === 'audit_stream.paused' && e.actor_type === 'system' && e.target_id === s.id));
    assert.match(await registry.metrics(), /^wum_audit_streams_paused_total [1-9]/m);

    const { events: announced } = await until('the event in the feed', () => feed(feedBefore), (f) => f.events.some((e) => e.type === 'audit_stream.paused'));
    const event = announced.find((e) => e.type === 'audit_stream.paused')!;
    assert.deepEqual(event.actor, { type: 'system', id: null, label: 'system' });
    assert.deepEqual(event.data, {
      audit_stream: { id: s.id, name: 'Paused', status: 'paused', last_error: paused.last_error, failing_since: paused.failing_since, cursor: paused.cursor },
    });
    const [delivery] = await webhooks.waitFor(1);
    assert.equal(delivery!.headers['webhook-id'], event.id);
    assert.deepEqual(new Webhook(json<'createWebhookEndpoint'>(hook).secret).verify(delivery!.body, delivery!.headers as Record<string, string>), event, 'the webhook sends the event as the feed lists it, signed');

    const allPaused = await until('the operator\'s stream paused', async () => (await ctx.admin('GET', `/audit-streams/${all.id}`)).json() as WireStream, (x) => x.status === 'paused');
    const operatorRows = json<{ audit_events: Array<{ actor_type: string; workspace: string | null }> }>(await ctx.admin('GET', `/audit-events?action=audit_stream.paused&target_id=${all.id}`)).audit_events;
    assert.deepEqual(operatorRows.map((r) => [r.actor_type, r.workspace]), [['system', null]], 'the operator\'s stream\'s pause is audited, in no workspace');
    assert.match(await registry.metrics(), /^wum_audit_streams_paused_total ([2-9]|\d{2,})/m, 'and counted');
    assert.ok(!JSON.stringify((await feed(feedBefore)).events).includes(all.id), 'but it is in no workspace\'s feed');
    assert.equal(allPaused.last_error !== null, true);
    assert.equal((await ctx.admin('DELETE', `/audit-streams/${all.id}`)).statusCode, 204);
    await sleep(500);
    assert.equal(webhooks.received.length, 1, 'one event, one delivery: the operator\'s stream sent none');

    hec.down(false);
    await sleep(1000);
    assert.equal(hec.rows().length, 0, 'nothing is sent while paused');
    const resumed = await own('PATCH', `/${s.id}`, { status: 'active' });
    assert.equal(resumed.statusCode, 200, resumed.body);
    const done = await until('the resumed stream caught up', () => stream(s.id), (x) => x.status === 'active' && x.lag_rows === 0);
    const listed = json<'listWorkspaceAuditEvents'>(await ctx.admin('GET', `/workspaces/${ws.subdomain}/audit-events?page_size=100`)).audit_events as Array<{ id: number }>;
    const expected = listed.map((e) => e.id).filter((id) => id > s.cursor && id <= done.cursor).sort((a, b) => a - b);
    assert.deepEqual([...new Set(hec.rows().map((r) => r.id as number))], expected, 'from the cursor on, in order, nothing lost');
    assert.ok((await auditActions()).includes('audit_stream.resumed'));
    assert.equal((await own('DELETE', `/${s.id}`)).statusCode, 204);
    assert.equal((await ctx.admin('DELETE', `/workspaces/${ws.subdomain}/webhook-endpoints/${json<'createWebhookEndpoint'>(hook).id}`)).statusCode, 204);
  });

  test('replay sends the rows from an instant again; test sends one synthetic row and says what the destination answered', { timeout: 60_000 }, async () => {
    const from = new Date();
    const s = await create({ name: 'Replay', destination: { type: 'https', url: jsonl.url } });
    await addUsers('replay', 2);
    await until('caught up', () => stream(s.id), (x) => x.lag_rows === 0 && x.cursor > s.cursor);
    jsonl.received.length = 0;
    const replayed = await own('POST', `/${s.id}/replay`, { from: from.toISOString() });
    assert.equal(replayed.statusCode, 200, replayed.body);
    assert.equal(json<'replayOwnAuditStream'>(replayed).complete, true);
    assert.ok(json<'replayOwnAuditStream'>(replayed).audit_stream.cursor <= s.cursor + 1);
    await until('the rows sent again', () => jsonl.rows(), (rows) => rows.some((r) => r.action === 'user.created'));
    assert.ok((await auditActions()).includes('audit_stream.replayed'));

    const ok = await own('POST', `/${s.id}/test`);
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json(), { ok: true, error: null });
    assert.ok(jsonl.rows().some((r) => r.action === 'audit_stream.test' && r.id === 0));
    jsonl.down(true);
    const refused = json<'testOwnAuditStream'>(await own('POST', `/${s.id}/test`));
    assert.equal(refused.ok, false);
    assert.match(refused.error!, /503/);
    jsonl.down(false);
    assert.equal((await own('DELETE', `/${s.id}`)).statusCode, 204);
  });
});
