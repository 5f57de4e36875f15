// one backend: postgres: the SDK against a server process, over the HTTP API (scripts/test-backends.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { WumApiError, type AuditStream, type WumAdminClient, type WumClient } from 'wum/sdk';
import { BACKEND } from '../helpers/test-context.ts';
import type { StreamReceiver } from '../../harness/stream-receivers.ts';
import { startStreamsServer, type StreamsServer } from '../helpers/streams-server.ts';

const TIMEOUT = { timeout: 120_000 };

/** A check for `assert.rejects`: the call failed with this WumApiError code (and status). */
const apiError = (code: string, status?: number) => (error: unknown) => {
  assert.ok(error instanceof WumApiError, `expected a WumApiError, got ${String(error)}`);
  assert.equal(error.code, code, error.detail);
  if (status !== undefined) assert.equal(error.status, status);
  return true;
};

/** Reads `read()` until `done` holds (or fails after 30 s, showing the last value). */
async function until<T>(what: string, read: () => Promise<T> | T, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
    await sleep(100);
  }
}

/*
 * The SDK's audit streams (docs/api.md, "Audit streams") against a server process, whose worker
 * sends to a JSON Lines receiver on 127.0.0.1: the workspace client's create (the secret once),
 * list and iterate with health, get, update, pause and resume, test, replay and delete; and the
 * operator client's streams of one workspace or of every one.
 */
describe(`SDK audit streams against a server process [${BACKEND}]`, () => {
  let running: StreamsServer;
  let admin: WumAdminClient;
  let wum: WumClient;
  let receiver: StreamReceiver;
  let serial = 0;

  const addUser = () => wum.users.add({ email: `s${++serial}@example.com`, role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] });
  const receivedActions = () => receiver.rows().map((r) => `${String(r.action)} ${String(r.target_id)}`);

  before(async () => {
    running = await startStreamsServer('streams');
    ({ admin, wum, receiver } = running);
  }, TIMEOUT);
  after(() => running?.close());

  test('the workspace client: create (secret once), delivery and health, list, iterate, get, update, pause, resume', TIMEOUT, async () => {
    const created = await wum.auditStreams.create({ name: 'SIEM', format: 'json', destination: { type: 'https', url: receiver.url } });
    assert.match(created.secret!, /^whsec_/);
    assert.equal(created.workspace, 'streams');
    assert.equal(created.status, 'active');
    assert.deepEqual(created.destination, { type: 'https', url: receiver.url });
    const got = await wum.auditStreams.get(created.id);
    assert.equal('secret' in got, false, 'the secret is shown only by the create');

    await addUser();
    await until('the user.created row', receivedActions, (a) => a.includes('user.created s1@example.com'));
    // Signed with the secret the create showed (Standard Webhooks; a batch is JSON Lines, which verify() cannot parse, so signed again and compared).
    const batch = receiver.received.find((r) => r.rows.some((row) => row.action === 'user.created'))!;
    const at = new Date(Number(batch.headers['webhook-timestamp']) * 1000);
    assert.equal(batch.headers['webhook-signature'], new Webhook(created.secret!).sign(batch.headers['webhook-id'] as string, at, batch.body));
    const healthy = await until('no lag', () => wum.auditStreams.get(created.id), (s) => s.lag_rows === 0 && s.last_delivered_at !== null);
    assert.equal(healthy.status, 'active');
    assert.equal(healthy.last_error, null);
    assert.equal(healthy.lag_seconds, 0);

    assert.deepEqual((await wum.auditStreams.list()).map((s) => s.id), [created.id]);
    const iterated: AuditStream[] = [];
    for await (const stream of wum.auditStreams.iterate()) iterated.push(stream);
    assert.deepEqual(iterated.map((s) => s.id), [created.id]);

    const renamed = await wum.auditStreams.update(created.id, { name: 'Splunk soon', actions: ['user.created'] });
    assert.equal(renamed.name, 'Splunk soon');
    assert.deepEqual(renamed.actions, ['user.created']);

    // Paused: nothing is sent, the rows wait behind the cursor; resumed: they arrive.
    const paused = await wum.auditStreams.pause(created.id);
    assert.equal(paused.status, 'paused');
    await addUser();
    await sleep(1500);
    assert.equal(receivedActions().includes('user.created s2@example.com'), false, 'nothing sent while paused');
    assert.equal((await wum.auditStreams.get(created.id)).lag_rows, 1);
    assert.equal((await wum.auditStreams.resume(created.id)).status, 'active');
    await until('the row written while paused', receivedActions, (a) => a.includes('user.created s2@example.com'));
  });

  test('test sends one synthetic row and says what the destination answered; replay sends rows again; delete', TIMEOUT, async () => {
    const [stream] = await wum.auditStreams.list();
    const ok = await wum.auditStreams.test(stream!.id);
    assert.deepEqual(ok, { ok: true, error: null });
    assert.ok(receiver.rows().some((r) => r.action === 'audit_stream.test' && r.id === 0));
    receiver.down(true);
    const refused = await wum.auditStreams.test(stream!.id);
    assert.equal(refused.ok, false);
    assert.match(refused.error!, /503/);
    receiver.down(false);

    const first = receiver.rows().find((r) => r.action === 'user.created')!;
    const before = receiver.rows().filter((r) => r.id === first.id).length;
    const replay = await wum.auditStreams.replay(stream!.id, new Date(Date.parse(String(first.occurred_at))));
    assert.equal(replay.complete, true);
    assert.ok(replay.audit_stream.cursor < Number(first.id), 'the cursor moved back before the row');
    await until('the replayed row', () => receiver.rows().filter((r) => r.id === first.id).length, (n) => n > before);
    await assert.rejects(wum.auditStreams.replay(stream!.id, 'yesterday'), apiError('validation_failed', 400));

    await wum.auditStreams.delete(stream!.id);
    await assert.rejects(wum.auditStreams.get(stream!.id), apiError('audit_stream_not_found', 404));
    await assert.rejects(wum.auditStreams.delete(stream!.id), apiError('audit_stream_not_found', 404));
  });

  test('a destination the API refuses is a validation_failed naming the field', TIMEOUT, async () => {
    await assert.rejects(wum.auditStreams.create({ name: 'x', format: 'json', destination: { type: 'https', url: 'http://10.0.0.1/audit' } }), (error) => {
      apiError('validation_failed', 400)(error);
      assert.deepEqual((error as WumApiError).errors.map((e) => e.field), ['destination.url']);
      return true;
    });
  });

  test('the operator client: a stream of every workspace or of one; a workspace sees only its own', TIMEOUT, async () => {
    const everyWorkspace = await admin.auditStreams.create({
      name: 'All',
      format: 'ocsf',
      workspace: null,
      destination: { type: 'splunk_hec', url: 'http://127.0.0.1:9/', token: 'hec-token' },
    });
    assert.equal(everyWorkspace.workspace, null);
    assert.equal(everyWorkspace.secret, undefined, 'only an https stream has a signing secret');
    assert.deepEqual(everyWorkspace.destination, { type: 'splunk_hec', url: 'http://127.0.0.1:9/', token_set: true });
    const one = await admin.auditStreams.create({ name: 'Streams', format: 'json', workspace: 'streams', destination: { type: 'https', url: receiver.url } });
    assert.equal(one.workspace, 'streams');
    assert.match(one.secret!, /^whsec_/);
    const elsewhere = { name: 'x', format: 'json', workspace: 'nope', destination: { type: 'https', url: receiver.url } } as const;
    await assert.rejects(admin.auditStreams.create(elsewhere), apiError('workspace_not_found', 404));

    const listed = await admin.auditStreams.list();
    assert.deepEqual(listed.map((s) => s.id).sort(), [everyWorkspace.id, one.id].sort());
    assert.deepEqual((await wum.auditStreams.list()).map((s) => s.id), [one.id], "the workspace's own only");
    await assert.rejects(wum.auditStreams.get(everyWorkspace.id), apiError('audit_stream_not_found', 404));

    assert.equal((await admin.auditStreams.pause(everyWorkspace.id)).status, 'paused');
    assert.equal((await admin.auditStreams.get(everyWorkspace.id)).status, 'paused');
    const replayed = await admin.auditStreams.replay(one.id, '2020-01-01T00:00:00Z');
    assert.equal(replayed.audit_stream.id, one.id);
    await admin.auditStreams.delete(everyWorkspace.id);
    await admin.auditStreams.delete(one.id);
    assert.deepEqual(await admin.auditStreams.list(), []);
  });
});
