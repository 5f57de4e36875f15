// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { sendS3Batch } from '../../src/audit-streams/destinations/s3.ts';
import { StreamSendError, type StreamBatch } from '../../src/audit-streams/send-batch.ts';
import type { S3Destination } from '../../src/core/audit-streams/destination.ts';
import { withSilentServer } from '../helpers/silent-server.ts';

/*
 * The S3 destination against s3rver, an S3-compatible server, on 127.0.0.1: what it stores is
 * read back with the AWS SDK (docs/api.md, "S3 objects").
 */

// s3rver's only key pair.
const CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const POLICY = { allowHttp: true, allowedNetworks: [], loopbackOnly: true };
const OPTIONS = { policy: POLICY, timeoutMs: 10_000 };

function batchOf(firstId: number, count: number, at: Date): StreamBatch {
  const lines = Array.from({ length: count }, (_, i) => JSON.stringify({ id: firstId + i, action: 'user.created', note: 'é ✓' }));
  return { streamId: 'stream-1', lines, occurredAt: lines.map(() => at), firstAuditId: firstId, lastAuditId: firstId + count - 1 };
}

describe('S3 audit stream destination', () => {
  let dir: string;
  let server: S3rver;
  let endpoint: string;
  let reader: S3Client;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'wum-s3-'));
    server = new S3rver({ address: '127.0.0.1', port: 0, directory: dir, silent: true });
    const { port } = await server.run();
    endpoint = `http://127.0.0.1:${port}`;
    reader = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CREDENTIALS });
    await reader.send(new CreateBucketCommand({ Bucket: 'audit' }));
  });

  after(async () => {
    reader.destroy();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const destination = (): S3Destination => ({ type: 's3', endpoint, region: 'us-east-1', bucket: 'audit', prefix: 'wum/audit/', ...CREDENTIALS });

  async function stored(prefix: string) {
    const listed = await reader.send(new ListObjectsV2Command({ Bucket: 'audit', Prefix: prefix }));
    return Promise.all(
      (listed.Contents ?? []).map(async ({ Key }) => {
        const object = await reader.send(new GetObjectCommand({ Bucket: 'audit', Key }));
        const body = Buffer.from(await object.Body!.transformToByteArray());
        return { key: Key!, contentType: object.ContentType, contentEncoding: object.ContentEncoding, text: gunzipSync(body).toString('utf8') };
      }),
    );
  }

  test('each batch is one gzipped JSON Lines object, keys in batch order, the same batch on the same key', async () => {
    const prefix = 'orders/';
    const batches = [
      batchOf(7, 3, new Date('2026-11-26T23:59:59.998Z')),
      batchOf(10, 1, new Date('2026-11-26T23:59:59.999Z')),
      batchOf(11, 2, new Date('2026-11-27T00:00:00.000Z')),
      // Same millisecond as the one before: the audit ids order them.
      batchOf(998, 2, new Date('2026-11-27T00:00:00.000Z')),
      batchOf(1000, 5, new Date('2026-11-27T00:00:00.000Z')),
    ];
    for (const batch of batches) await sendS3Batch({ ...destination(), prefix }, batch, OPTIONS);
    await sendS3Batch({ ...destination(), prefix }, batches[1]!, OPTIONS);

    const objects = await stored(prefix);
    assert.equal(objects.length, batches.length, 'a batch sent twice overwrites its own object');
    const keys = objects.map((o) => o.key);
    assert.deepEqual(keys, [...keys].sort(), 'the listing is in key order');
    assert.deepEqual(
      objects.map((o) => o.text),
      batches.map((b) => b.lines.map((l) => `${l}\n`).join('')),
      'in key order, the objects hold the batches in the order sent, line for line',
    );
    assert.equal(keys[0], 'orders/2026/11/26/20261126T235959998Z_00000000000000000007-00000000000000000009.jsonl.gz');
    assert.equal(keys[2], 'orders/2026/11/27/20261127T000000000Z_00000000000000000011-00000000000000000012.jsonl.gz');
    for (const o of objects) {
      assert.equal(o.contentType, 'application/x-ndjson');
      assert.equal(o.contentEncoding, 'gzip');
    }
  });

  test('without a prefix, keys start at the year', async () => {
    await sendS3Batch({ ...destination(), prefix: undefined }, batchOf(1, 1, new Date('2025-01-02T03:04:05.006Z')), OPTIONS);
    const objects = await stored('2025/');
    assert.deepEqual(
      objects.map((o) => o.key),
      ['2025/01/02/20250102T030405006Z_00000000000000000001-00000000000000000001.jsonl.gz'],
    );
  });

  test('an unknown access key → StreamSendError naming the S3 error, never the secret', async () => {
    // s3rver checks the access key, not Signature V4 signatures: a wrong key stands for bad credentials.
    const secret = 'not-the-secret-Zq8v';
    const error = await sendS3Batch({ ...destination(), accessKeyId: 'NOBODY', secretAccessKey: secret }, batchOf(1, 1, new Date()), OPTIONS).catch(
      (e: unknown) => e,
    );
    assert.ok(error instanceof StreamSendError);
    assert.match(error.message, /^S3 PutObject to bucket "audit" failed: InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records\. \(HTTP 403\)$/);
    assert.ok(!error.message.includes(secret));
  });

  test('a missing bucket → StreamSendError NoSuchBucket', async () => {
    const error = await sendS3Batch({ ...destination(), bucket: 'no-such-bucket' }, batchOf(1, 1, new Date()), OPTIONS).catch((e: unknown) => e);
    assert.ok(error instanceof StreamSendError);
    assert.match(error.message, /^S3 PutObject to bucket "no-such-bucket" failed: NoSuchBucket: .+ \(HTTP 404\)$/);
  });

  test('an endpoint the outbound guard refuses is never connected to', async () => {
    // Off loopback under WEBHOOK_LOOPBACK_ONLY: a literal address refused before any connection,
    // a host name refused before it is even looked up.
    for (const refused of ['https://10.1.2.3:9000', 'https://s3.example.test:9000']) {
      const started = Date.now();
      const error = await sendS3Batch({ ...destination(), endpoint: refused }, batchOf(1, 1, new Date()), OPTIONS).catch((e: unknown) => e);
      assert.ok(error instanceof StreamSendError, refused);
      assert.match(error.message, /refused by the outbound guard: .*WEBHOOK_LOOPBACK_ONLY/, refused);
      assert.ok(Date.now() - started < 2000, `${refused} fails at once, not at a connect timeout`);
    }
    // Plain http where the policy allows none.
    const error = await sendS3Batch(destination(), batchOf(1, 1, new Date()), { ...OPTIONS, policy: { ...POLICY, allowHttp: false } }).catch((e: unknown) => e);
    assert.ok(error instanceof StreamSendError);
    assert.match(error.message, /refused by the outbound guard: must use https/);
  });

  test('a server that never answers → StreamSendError after the timeout', async () => {
    const started = Date.now();
    const error = await withSilentServer((port) =>
      sendS3Batch({ ...destination(), endpoint: `http://127.0.0.1:${port}` }, batchOf(1, 1, new Date()), { ...OPTIONS, timeoutMs: 300 }).catch((e: unknown) => e),
    );
    assert.ok(error instanceof StreamSendError);
    assert.match(error.message, /timed out after 300 ms/);
    assert.ok(Date.now() - started < 3000);
  });
});
