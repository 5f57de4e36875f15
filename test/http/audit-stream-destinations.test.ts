import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { startTestStreamWorker, type TestStreamWorker } from '../helpers/stream-worker.ts';
import { startRsyslog, type RsyslogReceiver } from '../../harness/rsyslog-receiver.ts';
import { startJsonLinesReceiver, type StreamReceiver } from '../../harness/stream-receivers.ts';
import { BACKEND, createTestContext, userBody, type TestContext, type TestWorkspace } from '../helpers/test-context.ts';
import { json } from '../helpers/json.ts';

/*
 * Audit streams end to end through the API and this process's worker (docs/api.md, "Audit
 * streams"), for the destinations and the format the other suite does not send to: an `s3`
 * stream into s3rver, a `syslog` stream into Debian's rsyslog over TLS (RFC 5425), and an
 * `ocsf` stream to a JSON Lines receiver; every one on 127.0.0.1. Each receives every audit
 * row written after its creation, once or more, in audit order.
 */

const ENV = { WEBHOOK_ALLOW_HTTP: 'true', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' };
// s3rver's only key pair.
const S3_KEYS = { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' };

describe(`audit streams to S3, syslog over TLS, and in OCSF [${BACKEND}]`, () => {
  let ctx: TestContext;
  let ws: TestWorkspace;
  let worker: TestStreamWorker;
  let s3Dir: string;
  let s3: S3rver;
  let s3Endpoint: string;
  let reader: S3Client;
  let syslog: RsyslogReceiver;
  let jsonl: StreamReceiver;

  before(async () => {
    ctx = await createTestContext(ENV);
    await ctx.seedProducts();
    ws = await ctx.createWorkspace('sinks');
    s3Dir = mkdtempSync(join(tmpdir(), 'wum-s3-'));
    s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: s3Dir, silent: true });
    s3Endpoint = `http://127.0.0.1:${(await s3.run()).port}`;
    reader = new S3Client({ endpoint: s3Endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    await reader.send(new CreateBucketCommand({ Bucket: 'audit' }));
    syslog = await startRsyslog();
    jsonl = await startJsonLinesReceiver();
    worker = startTestStreamWorker(ctx, { timeoutMs: 10_000, pauseAfterMs: 3_600_000 });
  });
  after(async () => {
    await worker?.stop();
    reader?.destroy();
    // Already closed when a test failed while its bucket was down.
    await s3?.close().catch(() => undefined);
    if (s3Dir) rmSync(s3Dir, { recursive: true, force: true });
    await syslog?.stop();
    await jsonl?.close();
    await ctx?.close();
  });

  async function create(body: Record<string, unknown>): Promise<{ id: string; cursor: number }> {
    const res = await ctx.api(ws, 'POST', '/audit-streams', { body: { name: 'SIEM', format: 'json', ...body } });
    assert.equal(res.statusCode, 201, res.body);
    return json<'createOwnAuditStream'>(res);
  }

  /** The workspace's audit ids after `cursor`, oldest first. */
  async function auditIdsAfter(cursor: number): Promise<number[]> {
    const res = await ctx.api(ws, 'GET', '/audit-events', { query: { sort: 'occurred_at', page_size: '100' } });
    assert.equal(res.statusCode, 200, res.body);
    return (json<'listOwnAuditEvents'>(res).audit_events as Array<{ id: number }>).map((e) => e.id).filter((id) => id > cursor);
  }

  /** Waits until `read` has seen every id of `expected`; returns what it read. */
  async function untilAll(what: string, expected: number[], read: () => Promise<number[]>): Promise<number[]> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const got = await read();
      if (expected.every((id) => got.includes(id))) return got;
      if (Date.now() > deadline) throw new Error(`${what}: missing ${expected.filter((id) => !got.includes(id)).join(', ')}`);
      await sleep(200);
    }
  }

  /** The audit ids of the objects under `prefix`, in key order. */
  async function s3IdsUnder(prefix: string): Promise<number[]> {
    const listed = await reader.send(new ListObjectsV2Command({ Bucket: 'audit', Prefix: prefix }));
    const keys = (listed.Contents ?? []).map((object) => object.Key!).sort();
    const ids: number[] = [];
    for (const key of keys) {
      const object = await reader.send(new GetObjectCommand({ Bucket: 'audit', Key: key }));
      const text = gunzipSync(Buffer.from(await object.Body!.transformToByteArray())).toString('utf8');
      ids.push(...text.trim().split('\n').map((line) => (JSON.parse(line) as { id: number }).id));
    }
    return ids;
  }

  /** Drops repeats (at least once) and checks what is left is in audit order. */
  function assertInOrder(ids: number[], expected: number[]): void {
    const once = ids.filter((id, i) => ids.indexOf(id) === i);
    assert.deepEqual(once, expected, 'every row, in audit order');
  }

  test('an s3 stream writes gzipped JSON Lines objects whose keys sort in audit order; an ocsf stream sends OCSF events; a syslog stream sends RFC 5424 over TLS', async () => {
    const toS3 = await create({ name: 'Bucket', destination: { type: 's3', endpoint: s3Endpoint, region: 'us-east-1', bucket: 'audit', prefix: 'wum/', ...S3_KEYS } });
    const toSyslog = await create({ name: 'Syslog', destination: { type: 'syslog', host: '127.0.0.1', port: syslog.port, ca_certificate: syslog.caPem } });
    const inOcsf = await create({ name: 'OCSF', format: 'ocsf', destination: { type: 'https', url: jsonl.url } });
    for (let i = 0; i < 5; i += 1) {
      assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(`sink${i}@example.com`) })).statusCode, 201);
    }
    assert.equal((await ctx.api(ws, 'DELETE', '/users/sink0@example.com')).statusCode, 204);

    const s3Ids = () => s3IdsUnder('wum/');
    const s3Expected = await auditIdsAfter(toS3.cursor);
    assertInOrder(await untilAll('s3', s3Expected, s3Ids), s3Expected);

    const syslogExpected = await auditIdsAfter(toSyslog.cursor);
    const messages = await syslog.messages(syslogExpected.length);
    assertInOrder(messages.map((line) => (JSON.parse(line) as { id: number }).id), syslogExpected);

    const ocsfExpected = await auditIdsAfter(inOcsf.cursor);
    const events = () => jsonl.received.flatMap((request) => request.body.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>));
    const ocsfIds = async () => events().map((event) => Number((event.metadata as { uid: string }).uid));
    assertInOrder(await untilAll('ocsf', ocsfExpected, ocsfIds), ocsfExpected);
    const created = events().find((event) => (event.unmapped as { action?: string } | undefined)?.action === 'user.created');
    assert.ok(created, 'a user.created row arrived');
    assert.equal(created.class_uid, 3001, 'Account Change');
    assert.equal(created.activity_id, 1, 'Create');
    assert.equal(created.type_uid, 300101);
    const deactivated = events().find((event) => (event.unmapped as { action?: string } | undefined)?.action === 'user.deactivated');
    assert.equal(deactivated?.activity_id, 5, 'Disable');

    for (const id of [toS3.id, toSyslog.id, inOcsf.id]) {
      const health = json<'getOwnAuditStream'>(await ctx.api(ws, 'GET', `/audit-streams/${id}`));
      assert.equal(health.last_error, null, JSON.stringify(health));
    }
  });

  test('s3 and syslog down for a while, then back: failing with last_error, then every row in audit order', { timeout: 90_000 }, async () => {
    const toS3 = await create({ name: 'Bucket, flaky', destination: { type: 's3', endpoint: s3Endpoint, region: 'us-east-1', bucket: 'audit', prefix: 'flaky/', ...S3_KEYS } });
    const toSyslog = await create({ name: 'Syslog, flaky', destination: { type: 'syslog', host: '127.0.0.1', port: syslog.port, ca_certificate: syslog.caPem } });
    await s3.close();
    await syslog.down();
    for (let i = 0; i < 3; i += 1) assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(`down${i}@example.com`) })).statusCode, 201);

    const health = async (id: string) => json<'getOwnAuditStream'>(await ctx.api(ws, 'GET', `/audit-streams/${id}`));
    for (const id of [toS3.id, toSyslog.id]) {
      const deadline = Date.now() + 30_000;
      let seen = await health(id);
      while (seen.status !== 'failing') {
        assert.ok(Date.now() < deadline, `the stream failing: ${JSON.stringify(seen)}`);
        await sleep(100);
        seen = await health(id);
      }
      // Refused, or reset: a request in flight, or a kept-alive socket, when the server went away.
      assert.match(seen.last_error ?? '', /ECONNREFUSED|ECONNRESET/, 'what the destination did, in last_error');
      assert.ok(seen.lag_rows >= 3);
    }

    // Back on the same address, the bucket's objects kept.
    s3 = new S3rver({ address: '127.0.0.1', port: Number(new URL(s3Endpoint).port), directory: s3Dir, silent: true });
    await s3.run();
    await syslog.up();
    for (let i = 0; i < 2; i += 1) assert.equal((await ctx.api(ws, 'POST', '/users', { body: userBody(`back${i}@example.com`) })).statusCode, 201);

    const s3Expected = await auditIdsAfter(toS3.cursor);
    assertInOrder(await untilAll('s3', s3Expected, () => s3IdsUnder('flaky/')), s3Expected);
    const syslogExpected = await auditIdsAfter(toSyslog.cursor);
    const syslogIds = async () => (await syslog.messages(0)).map((line) => (JSON.parse(line) as { id: number }).id).filter((id) => id > toSyslog.cursor);
    assertInOrder(await untilAll('syslog', syslogExpected, syslogIds), syslogExpected);
    for (const id of [toS3.id, toSyslog.id]) {
      const deadline = Date.now() + 30_000;
      let seen = await health(id);
      while (seen.status !== 'active' || seen.lag_rows !== 0) {
        assert.ok(Date.now() < deadline, `the stream active again: ${JSON.stringify(seen)}`);
        await sleep(100);
        seen = await health(id);
      }
      assert.equal(seen.last_error, null);
    }
  });
});
