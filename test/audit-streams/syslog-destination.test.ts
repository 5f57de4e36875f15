// database-free: opens no database, so `npm test` runs it once (scripts/database-free.ts).
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { sendSyslogBatch } from '../../src/audit-streams/destinations/syslog.ts';
import { StreamSendError, type StreamBatch } from '../../src/audit-streams/send-batch.ts';
import type { SyslogDestination } from '../../src/core/audit-streams/destination.ts';
import { withSilentServer } from '../helpers/silent-server.ts';
import { makeCertificates, startRsyslog, type RsyslogReceiver } from '../../harness/rsyslog-receiver.ts';

/*
 * The syslog destination against Debian's rsyslog with its GnuTLS driver on 127.0.0.1: RFC 5424
 * messages in RFC 5425 frames, read back from the file rsyslog writes (docs/api.md, "Audit
 * streams: syslog messages").
 */

const POLICY = { allowHttp: false, allowedNetworks: ['127.0.0.0/8'], loopbackOnly: true };
const OPTIONS = { policy: POLICY, timeoutMs: 10_000 };

function batchOf(firstId: number, count: number): StreamBatch {
  const at = (i: number) => new Date(Date.UTC(2026, 10, 26, 12, 0, 0, firstId + i));
  const lines = Array.from({ length: count }, (_, i) =>
    JSON.stringify({ id: firstId + i, occurred_at: at(i).toISOString(), action: 'user.updated', after: { first_name: 'Zoë ✓', note: '"quoted" <x> \\ [y]' } }),
  );
  return { streamId: 'stream-1', lines, occurredAt: lines.map((_, i) => at(i)), firstAuditId: firstId, lastAuditId: firstId + count - 1 };
}

describe('syslog audit stream destination', () => {
  let receiver: RsyslogReceiver;
  let destination: SyslogDestination;

  before(async () => {
    receiver = await startRsyslog();
    destination = { type: 'syslog', host: '127.0.0.1', port: receiver.port, caCertificate: receiver.caPem };
  });

  after(async () => {
    await receiver?.stop();
  });

  test('every line arrives as one RFC 5424 message, in order, its MSG exactly the JSON line', async () => {
    const batches = [batchOf(1, 3), batchOf(4, 1), batchOf(5, 200)];
    // A row far larger than the 2048 octets every receiver must take (RFC 5425 §4.3.1).
    const big = JSON.stringify({ id: 205, occurred_at: '2026-11-26T12:00:01.000Z', action: 'user.updated', after: { scim: 'x'.repeat(20_000) } });
    batches.push({ ...batchOf(205, 1), lines: [big] });
    for (const batch of batches) await sendSyslogBatch(destination, batch, OPTIONS);

    const expected = batches.flatMap((b) => b.lines);
    const messages = await receiver.messages(expected.length);
    assert.equal(messages.length, expected.length);
    assert.deepEqual(messages, expected);

    const headers = await receiver.headers(expected.length);
    const first = JSON.parse(expected[0]!) as { occurred_at: string };
    // PRI 110: facility 13 (log audit), severity 6 (informational); version 1; rsyslog's own parse of the header.
    assert.equal(headers[0], `110|1|${first.occurred_at}|${hostname()}|wum|-|AUDIT|-|${expected[0]}`);
  });

  test('a CA that did not sign the server certificate → StreamSendError, certificate not trusted', async () => {
    const other = makeCertificates(receiver.dir, 'other');
    const error = await sendSyslogBatch({ ...destination, caCertificate: other.caPem }, batchOf(1, 1), OPTIONS).catch((e: unknown) => e);
    assert.ok(error instanceof StreamSendError);
    assert.match(error.message, /^syslog over TLS to 127\.0\.0\.1:\d+ failed: the server's TLS certificate is not trusted \(/);
    // Without a CA of its own, the system's CAs do not know the test CA either.
    const system = await sendSyslogBatch({ type: 'syslog', host: '127.0.0.1', port: receiver.port }, batchOf(1, 1), OPTIONS).catch((e: unknown) => e);
    assert.ok(system instanceof StreamSendError);
    assert.match(system.message, /certificate is not trusted/);
  });

  test('a host the outbound guard refuses is never connected to', async () => {
    for (const host of ['10.1.2.3', 'syslog.example.test']) {
      const started = Date.now();
      const error = await sendSyslogBatch({ ...destination, host }, batchOf(1, 1), OPTIONS).catch((e: unknown) => e);
      assert.ok(error instanceof StreamSendError, host);
      assert.match(error.message, /refused by the outbound guard: .*WEBHOOK_LOOPBACK_ONLY/, host);
      assert.ok(Date.now() - started < 2000, `${host} fails at once`);
    }
    // Loopback outside OUTBOUND_ALLOWED_NETWORKS.
    const error = await sendSyslogBatch(destination, batchOf(1, 1), { ...OPTIONS, policy: { ...POLICY, allowedNetworks: [] } }).catch((e: unknown) => e);
    assert.ok(error instanceof StreamSendError);
    assert.match(error.message, /refused by the outbound guard: 127\.0\.0\.1 is a loopback address/);
  });

  test('a port where nothing listens → StreamSendError ECONNREFUSED; a server that never answers → the timeout', async () => {
    const port = await withSilentServer(async (port) => {
      const error = await sendSyslogBatch({ ...destination, port }, batchOf(1, 1), { ...OPTIONS, timeoutMs: 300 }).catch((e: unknown) => e);
      assert.ok(error instanceof StreamSendError);
      assert.match(error.message, /timed out after 300 ms/);
      return port;
    });
    const refused = await sendSyslogBatch({ ...destination, port }, batchOf(1, 1), OPTIONS).catch((e: unknown) => e);
    assert.ok(refused instanceof StreamSendError);
    assert.match(refused.message, /ECONNREFUSED/);
  });
});
