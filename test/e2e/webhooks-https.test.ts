import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { selfSignedCertificate, type TestCertificate } from '../../harness/stream-receivers.ts';
import { sendRequest } from '../../harness/server-process.ts';
import { spawnedServers, type SpawnedServers } from '../helpers/spawned-server.ts';
import { BACKEND } from '../helpers/test-context.ts';
import { eventually } from '../reliability/support.ts';
import { json } from '../helpers/json.ts';

/*
 * Webhooks over https, as production sends them (docs/api.md, "Events and webhooks"): a real
 * server process that trusts a self-signed certificate for 127.0.0.1 (NODE_EXTRA_CA_CERTS) and
 * may reach loopback (OUTBOUND_ALLOWED_NETWORKS; http is off) delivers a change's event to an
 * https receiver, signed, recorded as delivered; a receiver whose certificate it does not trust
 * gets nothing, and the attempt is recorded as failed with the reason.
 */

interface Arrival {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** An https receiver on 127.0.0.1 with `cert`, answering 204; what it received. */
async function httpsReceiver(cert: TestCertificate) {
  const received: Arrival[] = [];
  const server = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe(`webhooks over https: trusted receivers get signed deliveries, untrusted ones nothing [${BACKEND}]`, () => {
  const trusted = selfSignedCertificate();
  const untrusted = selfSignedCertificate();
  let servers: SpawnedServers | undefined;
  const closers: Array<() => Promise<void>> = [];
  after(async () => {
    for (const close of closers) await close();
    await servers?.close();
    trusted.remove();
    untrusted.remove();
  });

  test('a change is POSTed over TLS, verified by standardwebhooks and recorded; a certificate not trusted fails the attempt', { timeout: 120_000 }, async () => {
    servers = await spawnedServers('wum_webhook_https', {
      NODE_EXTRA_CA_CERTS: trusted.certFile,
      OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32',
      WEBHOOK_RETRY_SCHEDULE: '60s',
      WEBHOOK_TIMEOUT_MS: '5000',
    });
    const good = await httpsReceiver(trusted);
    const bad = await httpsReceiver(untrusted);
    closers.push(good.close, bad.close);
    const server = await servers.start();
    const ws = await servers.seed('tls');
    const base = '/admin/v1/workspaces/tls/webhook-endpoints';
    const create = async (url: string) => {
      const res = await sendRequest(servers!.port, 'POST', base, { headers: servers!.admin, body: { url } });
      assert.equal(res.status, 201, res.body);
      return json<'createWebhookEndpoint'>(res);
    };
    const goodEndpoint = await create(good.url);
    const badEndpoint = await create(bad.url);

    await servers.addUser(ws, 'tls@example.com');
    const [event] = json<'listEvents'>(await servers.api(ws, 'GET', '/events')).events;
    await eventually(async () => good.received.length >= 1, 30_000, 'the delivery over https');
    const [arrival] = good.received;
    assert.equal(arrival!.headers['webhook-id'], event!.id);
    assert.deepEqual(new Webhook(goodEndpoint.secret as string).verify(arrival!.body, arrival!.headers as Record<string, string>), JSON.parse(arrival!.body));
    assert.equal((JSON.parse(arrival!.body) as { data: { user: { email: string } } }).data.user.email, 'tls@example.com');

    const deliveries = async (id: string) => {
      const res = await sendRequest(servers!.port, 'GET', `${base}/${id}/deliveries`, { headers: servers!.admin });
      assert.equal(res.status, 200, res.body);
      return json<'listWebhookDeliveries'>(res).deliveries;
    };
    await eventually(async () => (await deliveries(goodEndpoint.id as string))[0]?.status === 'succeeded', 30_000, 'the https delivery recorded');
    await eventually(async () => ((await deliveries(badEndpoint.id as string))[0]?.attempt_log.length ?? 0) >= 1, 30_000, 'the untrusted attempt recorded');
    const [failed] = await deliveries(badEndpoint.id as string);
    assert.equal(failed!.status, 'pending');
    assert.equal(failed!.attempt_log[0]!.response_status, null);
    assert.match(failed!.attempt_log[0]!.error!, /certificate/i);
    assert.equal(bad.received.length, 0);
    server.kill();
  });
});
