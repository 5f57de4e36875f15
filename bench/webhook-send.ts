/*
 * `node --import tsx bench/webhook-send.ts NAME=BUILD_DIR … [--deliveries N] [--rounds N] [--in-flight N]`:
 * the server's CPU per webhook delivery on its way out, build against build: each build's own
 * `signDelivery` (src/webhooks/sign.ts) and `createWebhookSender` (src/webhooks/send.ts), compiled
 * with `npx tsc -p tsconfig.build.json --outDir bench-profiles/dist-NAME`, sign and POST a
 * user event to a receiver answering 204 in a child process, `--in-flight` at a time, so this
 * process's CPU is the sender's alone. Prints each round's CPU per delivery and rate, then the
 * medians and each build's ratio to the first. See docs/performance.md, "Webhooks".
 */
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { watchMachineLoad } from './machine-load.ts';
import { median } from './measurement.ts';

if (process.argv[2] === '--receiver') {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as { port: number }).port));
} else {
  const machine = watchMachineLoad();
  const { values: options, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      deliveries: { type: 'string', default: '20000' },
      rounds: { type: 'string', default: '3' },
      'in-flight': { type: 'string', default: '10' },
    },
  });
  const builds = positionals.map((argument) => {
    const [name, dir] = argument.split('=', 2);
    if (!name || !dir) throw new Error(`expected NAME=BUILD_DIR, got ${argument}`);
    return { name, dir: resolve(dir) };
  });
  if (builds.length === 0) throw new Error('name at least one NAME=BUILD_DIR');

  type Sign = (msgId: string, at: Date, body: string, secrets: readonly string[]) => Record<string, string>;
  type Sender = { send(url: string, headers: Record<string, string>, body: string): Promise<{ status?: number; error?: string }>; close(): Promise<void> };
  const load = async (dir: string) => ({
    sign: ((await import(pathToFileURL(`${dir}/src/webhooks/sign.js`).href)) as { signDelivery: Sign }).signDelivery,
    sender: ((await import(pathToFileURL(`${dir}/src/webhooks/send.js`).href)) as { createWebhookSender: (p: unknown, t: number) => Sender }).createWebhookSender(
      { allowHttp: true, allowedNetworks: [], loopbackOnly: true },
      15_000,
    ),
  });

  const receiver = fork(new URL(import.meta.url).pathname, ['--receiver'], { execArgv: process.execArgv });
  const port = await new Promise<number>((done) => receiver.once('message', (m) => done(m as number)));
  const url = `http://127.0.0.1:${port}/hook`;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const now = new Date().toISOString();
  const user = { id: randomUUID(), email: 'ada@example.com', role: 'non_owner', first_name: 'Ada', last_name: 'Lovelace', status: 'active', apps: [{ name: 'crm', role: 'member' }], created_at: now, updated_at: now };
  const inFlight = Number(options['in-flight']);

  /** Sends `count` deliveries, `inFlight` at a time; resolves with this process's CPU per delivery (µs) and the rate. */
  async function run(build: Awaited<ReturnType<typeof load>>, count: number) {
    let sequence = 0;
    const one = async () => {
      sequence += 1;
      const id = `evt_${randomUUID().replaceAll('-', '')}`;
      const body = JSON.stringify({ id, type: 'user.created', sequence, created_at: now, workspace: { subdomain: 'bench' }, data: { user } });
      const result = await build.sender.send(url, { ...build.sign(id, new Date(), body, [secret]) }, body);
      if (result.status !== 204) throw new Error(`delivery failed: ${JSON.stringify(result)}`);
    };
    const started = performance.now();
    const cpu = process.cpuUsage();
    let left = count;
    await Promise.all(Array.from({ length: inFlight }, async () => {
      while (left-- > 0) await one();
    }));
    const used = process.cpuUsage(cpu);
    return { cpuUs: (used.user + used.system) / count, perSecond: count / ((performance.now() - started) / 1000) };
  }

  const loaded = await Promise.all(builds.map(async (b) => ({ ...b, build: await load(b.dir), cpu: [] as number[], rates: [] as number[] })));
  try {
    for (const b of loaded) await run(b.build, 5_000);
    for (let round = 1; round <= Number(options.rounds); round += 1) {
      for (const b of loaded) {
        const { cpuUs, perSecond } = await run(b.build, Number(options.deliveries));
        b.cpu.push(cpuUs);
        b.rates.push(perSecond);
        process.stdout.write(`round ${round} ${b.name}: ${cpuUs.toFixed(1)} µs CPU per delivery, ${perSecond.toFixed(0)} deliveries/s\n`);
      }
    }
    const first = median(loaded[0]!.cpu);
    for (const b of loaded) {
      process.stdout.write(`${b.name}: median ${median(b.cpu).toFixed(1)} µs CPU per delivery (${machine.ratio(median(b.cpu) / first)} ${loaded[0]!.name}), ${median(b.rates).toFixed(0)} deliveries/s\n`);
    }
    process.stdout.write(`${machine.summary()}\n`);
  } finally {
    for (const b of loaded) await b.build.sender.close();
    receiver.kill();
  }
}
