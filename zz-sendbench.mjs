// Sender CPU per delivery: the receiver runs in a child process; this process only signs and sends.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
const dir = process.argv[2];
const cached = process.argv[3] === 'cached';
if (process.argv[2] === 'child') {
  const { createServer } = await import('node:http');
  const s = createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(204).end()); });
  s.listen(0, '127.0.0.1', () => process.send(s.address().port));
} else {
  const child = fork(new URL(import.meta.url).pathname, ['child']);
  const port = await new Promise((r) => child.once('message', r));
  const { createWebhookSender } = await import(`./${dir}/src/webhooks/send.js`);
  const { signDelivery } = await import(`./${dir}/src/webhooks/sign.js`);
  const box = await import(`./${dir}/src/core/secrets/secret-box.js`);
  const ring = box.createKeyRing(randomBytes(32));
  const stored = box.encryptSecret(ring, `whsec_${randomBytes(32).toString('base64')}`);
  const memo = new Map();
  const open = (s) => { if (!cached) return box.decryptSecret(ring, s); let v = memo.get(s); if (!v) memo.set(s, (v = box.decryptSecret(ring, s))); return v; };
  const sender = createWebhookSender({ allowHttp: true, allowedNetworks: [], loopbackOnly: true }, 15000);
  const body = JSON.stringify({ id: 'evt_' + 'a'.repeat(32), type: 'user.created', sequence: 1, created_at: new Date().toISOString(), workspace: { subdomain: 'adds' }, data: { user: { id: randomBytes(16).toString('hex'), email: 'someone@example.com', role: 'non_owner', first_name: 'Ada', last_name: 'L', status: 'active', apps: [{ name: 'crm', role: 'member' }] } } });
  const url = `http://127.0.0.1:${port}/e1`;
  const one = async () => { const secrets = [stored].map(open); const r = await sender.send(url, { ...signDelivery('evt_1', new Date(), body, secrets) }, body); if (r.status !== 204) throw new Error(JSON.stringify(r)); };
  const run = async (n) => { let i = 0; await Promise.all(Array.from({ length: 10 }, async () => { while (i++ < n) await one(); })); };
  await run(5000);
  const results = [];
  for (let k = 0; k < 3; k++) {
    const t = performance.now(); const c = process.cpuUsage();
    const N = 20000; await run(N);
    const u = process.cpuUsage(c); const ms = performance.now() - t;
    results.push(`${((u.user + u.system) / N).toFixed(1)} µs CPU/delivery, ${(N / ms * 1000).toFixed(0)}/s`);
  }
  console.log(dir, cached ? 'cached' : 'decrypt', results.join(' | '));
  await sender.close(); child.kill();
}
