import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import S3rver from 's3rver';
import { sendRequest } from '../../harness/server-process.ts';
import { startRsyslog, type RsyslogReceiver } from '../../harness/rsyslog-receiver.ts';
import { spawnedServers, type SpawnedServers } from '../helpers/spawned-server.ts';
import { selfSignedCertificate, startJsonLinesReceiver, startSplunkHecReceiver, type StreamReceiver, type TestCertificate } from '../../harness/stream-receivers.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { eventually, sleep } from '../reliability/support.ts';
import { json } from '../helpers/json.ts';

/*
 * No audit row lost across a crash (docs/api.md, "Audit streams": at least once, in audit order,
 * de-duplicable by id): a real server process streams one workspace's trail to all four
 * destination types on 127.0.0.1, each over TLS: an HTTPS receiver and a Splunk HEC with a
 * self-signed certificate the server trusts (NODE_EXTRA_CA_CERTS), s3rver serving https with
 * that certificate, and Debian's rsyslog (RFC 5425, its own CA given as the stream's
 * `ca_certificate`). The HEC is down while changes are made; the server is killed with SIGKILL
 * right after the last change, with rows undelivered and batches in flight, restarted on the
 * same storage with the HEC back, and every audit id of the workspace then arrives at each
 * destination, in order, once repeats are removed by audit id.
 */

const HEC_TOKEN = 'crash-hec-token-0123';
// s3rver's only key pair.
const S3_KEY = { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' };
const USERS = 40;
const TEST_TIMEOUT = { timeout: 300_000 };

/** The distinct ids of `ids` in the order they first arrived (but the test send's synthetic row 0). */
const firstArrivals = (ids: readonly number[]) => [...new Set(ids.filter((id) => id > 0))];

describe(`audit streams: SIGKILL mid-stream, restart, every row delivered in order [${BACKEND}]`, () => {
  let servers: SpawnedServers | undefined;
  let cert: TestCertificate | undefined;
  let jsonl: StreamReceiver | undefined;
  let hec: StreamReceiver | undefined;
  let s3: { server: S3rver; dir: string; reader: S3Client } | undefined;
  let rsyslog: RsyslogReceiver | undefined;
  after(async () => {
    await servers?.close();
    await jsonl?.close();
    await hec?.close();
    s3?.reader.destroy();
    await s3?.server.close();
    if (s3) rmSync(s3.dir, { recursive: true, force: true });
    await rsyslog?.stop();
    cert?.remove();
  });

  /** s3rver on https with `tls`, its bucket `audit` made, and a client of the test's own that trusts it. */
  async function startS3(tls: TestCertificate) {
    const dir = mkdtempSync(join(tmpdir(), 'wum-s3-crash-'));
    const server = new S3rver({ address: '127.0.0.1', port: 0, directory: dir, silent: true, configureBuckets: [{ name: 'audit' }], key: tls.key, cert: tls.cert });
    const { port } = await server.run();
    const endpoint = `https://127.0.0.1:${port}`;
    const reader = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: S3_KEY.access_key_id, secretAccessKey: S3_KEY.secret_access_key },
      requestHandler: new NodeHttpHandler({ httpsAgent: new Agent({ ca: tls.cert }) }),
    });
    s3 = { server, dir, reader };
    return endpoint;
  }

  /**
   * The ids in the bucket: objects in key order (time, then audit ids), lines in order. s3rver
   * writes an object's file as its body arrives, so it lists a PUT still under way, or one the
   * SIGKILL cut short, with part of its gzip body; S3 stores an object only whole. Such an object
   * is read as not there (yet): a cut batch is sent again whole, under a key of its own.
   */
  async function s3Ids(): Promise<number[]> {
    const listed = await s3!.reader.send(new ListObjectsV2Command({ Bucket: 'audit', Prefix: 'wum/' }));
    const ids: number[] = [];
    for (const { Key } of listed.Contents ?? []) {
      const object = await s3!.reader.send(new GetObjectCommand({ Bucket: 'audit', Key }));
      let text: string;
      try {
        text = gunzipSync(Buffer.from(await object.Body!.transformToByteArray())).toString('utf8');
      } catch (error) {
        if ((error as { code?: string }).code === 'Z_BUF_ERROR') continue;
        throw error;
      }
      for (const line of text.trimEnd().split('\n')) ids.push((JSON.parse(line) as { id: number }).id);
    }
    return ids;
  }

  /** The ids of the messages rsyslog wrote, in arrival order; `cut` counts messages that are not a whole row. */
  async function syslogIds(): Promise<{ ids: number[]; cut: number }> {
    const ids: number[] = [];
    let cut = 0;
    for (const message of await rsyslog!.messages(0)) {
      try {
        ids.push((JSON.parse(message) as { id: number }).id);
      } catch {
        // The frame the kill cut short, should rsyslog pass its part on: the batch is sent again whole.
        cut += 1;
      }
    }
    return { ids, cut };
  }

  test('every audit id arrives at each of the four destinations after the restart, in order', TEST_TIMEOUT, async () => {
    cert = selfSignedCertificate();
    servers = await spawnedServers('wum_stream_crash', { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', WEBHOOK_TIMEOUT_MS: '2000', NODE_EXTRA_CA_CERTS: cert.certFile });
    const { port, admin } = servers;
    jsonl = await startJsonLinesReceiver({ tls: cert });
    hec = await startSplunkHecReceiver(HEC_TOKEN, { tls: cert });
    const s3Endpoint = await startS3(cert);
    rsyslog = await startRsyslog();
    const first = await servers.start();
    const ws = await servers.seed('streamy');

    const arrivals: Record<string, () => Promise<number[]>> = {
      https: async () => jsonl!.rows().map((r) => r.id as number),
      splunk_hec: async () => hec!.rows().map((r) => r.id as number),
      s3: s3Ids,
      syslog: async () => (await syslogIds()).ids,
    };
    const streams: Array<{ id: string; cursor: number; type: string }> = [];
    for (const destination of [
      { type: 'https', url: jsonl.url },
      { type: 'splunk_hec', url: hec.url, token: HEC_TOKEN },
      { type: 's3', endpoint: s3Endpoint, region: 'us-east-1', bucket: 'audit', prefix: 'wum/', ...S3_KEY },
      { type: 'syslog', host: '127.0.0.1', port: rsyslog.port, ca_certificate: rsyslog.caPem },
    ]) {
      const res = await servers.api(ws, 'POST', '/audit-streams', { name: destination.type, format: 'json', destination });
      assert.equal(res.status, 201, res.body);
      streams.push({ ...(res.json() as { id: string; cursor: number }), type: destination.type });
    }
    const test = await servers.api(ws, 'POST', `/audit-streams/${streams[0]!.id}/test`);
    assert.deepEqual(test.json(), { ok: true, error: null }, 'the server trusts the receiver\'s certificate');

    hec.down(true);
    for (let i = 0; i < USERS; i += 1) {
      await servers.addUser(ws, `crash${i}@example.com`);
      if (i === USERS / 2) {
        for (const type of ['https', 's3', 'syslog']) {
          await eventually(async () => firstArrivals(await arrivals[type]!()).length > 0, 30_000, `a first batch at the ${type} destination`);
        }
        await eventually(async () => hec!.received.length > 0, 30_000, 'the HEC refused a batch');
      }
    }
    // SIGKILL the whole process group right after the last change: rows undelivered, batches in flight.
    await servers.crash(first);
    hec.down(false);

    const second = await servers.start();
    const listing = await sendRequest(port, 'GET', '/admin/v1/workspaces/streamy/audit-events?page_size=100', { headers: admin });
    assert.equal(listing.status, 200, listing.body);
    const ids = json<{ audit_events: Array<{ id: number }> }>(listing).audit_events.map((e) => e.id).sort((a, b) => a - b);
    assert.ok(ids.length >= USERS + 4);
    for (const stream of streams) {
      const expected = ids.filter((id) => id > stream.cursor);
      let got: number[] = [];
      await eventually(
        async () => {
          got = firstArrivals(await arrivals[stream.type]!());
          if (got.length < expected.length) await sleep(250);
          return got.length >= expected.length;
        },
        120_000,
        `every row at the ${stream.type} destination`,
      );
      assert.deepEqual(got, expected, `${stream.type}: every audit id, in audit order (duplicates allowed)`);
    }
    assert.ok((await syslogIds()).cut <= 1, 'at most the one frame the kill cut short is not a whole row');
    const health = async () => json<'getOwnAuditStream'>(await servers!.api(ws, 'GET', `/audit-streams/${streams[1]!.id}`));
    await eventually(async () => (await health()).status === 'active', 30_000, 'the HEC stream active again');
    assert.equal((await health()).last_error, null);
    assert.match((await sendRequest(port, 'GET', '/metrics')).body, /^wum_audit_stream_rows_delivered_total\{stream="[^"]+"\} [1-9]/m);
    second.kill();
  });
});
