/*
 * `node --import tsx bench/compare-builds.ts NAME=SERVER_JS … [--rounds N] [--seconds S]
 * [--warmup S] [--scenario products|list|scim|search|add] [--endpoints N]`: `GET /products` (or `GET /users` page 1 of the
 * 10,000 users, `--scenario list`, or SCIM `userName eq` of one of them, `--scenario scim`, or `GET /users?q=` of a
 * prefix of a few of their emails, `--scenario search`, or `POST /users` of new users, `--scenario add`, with `--endpoints N`
 * webhook endpoints to a receiver in this process) against several compiled servers, taken in turn round after
 * round against one seeded PostgreSQL, so that a before/after comparison shares the
 * machine's moments (on a shared machine the rate moves more between minutes than between
 * builds). `NAME=bare` is the bare Fastify server of bench/framework-ceiling.ts. Build each
 * variant at its commit with `npx tsc -p tsconfig.build.json --outDir bench-profiles/dist-NAME`
 * (the compiled code finds the migrations from the package root, so any folder inside the
 * checkout works). Prints each round's rate and the server's and the database's CPU per request (and with
 * endpoints the receiver's, this process's), then the medians. Each server's endpoints are created after it starts,
 * and deleted once their deliveries are all sent, before the next server starts.
 * See docs/performance.md, "The fixed cost of a request".
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { freePort } from '../harness/free-port.ts';
import { sendRequest } from '../harness/server-process.ts';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { buildFrameworkCeiling, CEILING_SCRIPT } from './framework-ceiling-build.ts';
import { runHttpLoad } from './http-load.ts';
import { median } from './measurement.ts';
import { postmasterPid, sampleOwnCpu, sampleUsage, startServer, type ServerHandle } from './processes.ts';
import { addRequest, listRequest, productsRequest, scimFindRequest, searchRequest } from './requests.ts';
import { seededEmail, seedSmallAndAdds } from './seed.ts';

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '6' },
    scenario: { type: 'string', default: 'products' },
    endpoints: { type: 'string', default: '0' },
  },
});

/** One server to measure: its label and the script `node` starts. */
interface Variant {
  readonly name: string;
  readonly script: string;
}

const variants: Variant[] = positionals.map((argument) => {
  const [name, script] = argument.split('=', 2);
  if (!name || !script) throw new Error(`expected NAME=SERVER_JS or NAME=bare, got ${argument}`);
  return { name, script: script === 'bare' ? CEILING_SCRIPT : script };
});
if (variants.length === 0) throw new Error('name at least one NAME=SERVER_JS');
if (!['products', 'list', 'scim', 'search', 'add'].includes(options.scenario)) throw new Error(`unknown scenario ${options.scenario}: products, list, scim, search or add`);
// The bare server answers only the catalogue: against page 1 it would measure another request.
if (options.scenario !== 'products' && variants.some((v) => v.script === CEILING_SCRIPT)) throw new Error('NAME=bare measures products only');
if (variants.some((v) => v.script === CEILING_SCRIPT)) buildFrameworkCeiling();
const endpointCount = Number(options.endpoints);
if (!Number.isInteger(endpointCount) || endpointCount < 0) throw new Error(`--endpoints takes a count, not ${options.endpoints}`);
if (endpointCount > 0 && options.scenario !== 'add') throw new Error('--endpoints goes with --scenario add');
const ADMIN_TOKEN = 'bench-compare-builds-admin-token-01';

/** A receiver answering 204 to every delivery, in this process (its CPU is this process's). */
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(204).end());
});
if (endpointCount > 0) await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));

/** Creates the endpoints of `subdomain` on `server`; resolves with a function that drains and deletes them. */
async function withEndpoints(server: ServerHandle, subdomain: string): Promise<() => Promise<void>> {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const base = `/admin/v1/workspaces/${subdomain}/webhook-endpoints`;
  const ids: string[] = [];
  for (let i = 0; i < endpointCount; i += 1) {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/e${i}`;
    const res = await sendRequest(server.port, 'POST', base, { headers: admin, body: { url } });
    if (res.status !== 201) throw new Error(`endpoint creation failed: ${res.status} ${res.body}`);
    ids.push((res.json() as { id: string }).id);
  }
  return async () => {
    for (const started = Date.now(); !/^wum_webhook_deliveries_pending 0$/m.test((await sendRequest(server.port, 'GET', '/metrics')).body); ) {
      if (Date.now() - started > 120_000) throw new Error('deliveries still pending after 2 minutes');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    for (const id of ids) await sendRequest(server.port, 'DELETE', `${base}/${id}`, { headers: admin });
  };
}


const cluster = await startPostgresCluster();
if (!cluster) throw new Error('bench/compare-builds.ts needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
const measured = new Map<string, { rates: number[]; cpuUs: number[]; databaseUs: number[]; receiverUs: number[] }>(
  variants.map((v) => [v.name, { rates: [], cpuUs: [], databaseUs: [], receiverUs: [] }]),
);
try {
  const { small, adds } = await seedSmallAndAdds(cluster.url);
  let looked = 0;
  const next = {
    list: () => listRequest(small, 1),
    // A different seeded user each time (a stride prime to the workspace's size).
    scim: () => scimFindRequest(small, seededEmail(small.subdomain, 1 + ((looked++ * 7919) % small.users))),
    // A prefix of about eleven seeded emails (u123 is u123, u1230…u1239), a different one each time.
    search: () => searchRequest(small, `u${100 + ((looked++ * 7919) % 900)}`),
    add: () => addRequest(adds),
    products: () => productsRequest(small),
  }[options.scenario as 'list' | 'scim' | 'search' | 'add' | 'products'];
  const database = await postmasterPid(cluster.url);
  for (let round = 1; round <= Number(options.rounds); round += 1) {
    for (const variant of variants) {
      const env = {
        DATABASE_URL: cluster.url,
        DATABASE_POOL_SIZE: '10',
        RATE_LIMIT_PER_KEY: '0',
        LOG_LEVEL: 'info',
        ...(endpointCount > 0 ? { ADMIN_TOKEN, WEBHOOK_ALLOW_HTTP: 'true' } : {}),
      };
      const server = await startServer(variant.script, env, await freePort(), { nodeArgs: ['--max-old-space-size=128'] });
      const removeEndpoints = endpointCount > 0 ? await withEndpoints(server, adds.subdomain) : undefined;
      try {
        await runHttpLoad({ port: server.port, connections: 10, seconds: Number(options.warmup), next });
        const cpu = sampleUsage(server.pid, 250);
        const databaseCpu = sampleUsage(database, 250);
        const own = sampleOwnCpu();
        const { perSecond, errors } = await runHttpLoad({ port: server.port, connections: 10, seconds: Number(options.seconds), next });
        const perRequest = (percent: number) => (percent / 100 / perSecond) * 1e6;
        const cpuUs = perRequest(cpu.stop().cpuPercent);
        const databaseUs = perRequest(databaseCpu.stop().cpuPercent);
        // The load generator's CPU and, with endpoints, the receiver's: this process's.
        const receiverUs = perRequest(own.stop().cpuPercent);
        const figures = measured.get(variant.name)!;
        figures.rates.push(perSecond);
        figures.cpuUs.push(cpuUs);
        figures.databaseUs.push(databaseUs);
        figures.receiverUs.push(receiverUs);
        process.stdout.write(
          `round ${round} ${variant.name}: ${perSecond.toFixed(0)} req/s, server ${cpuUs.toFixed(1)} µs/req, database ${databaseUs.toFixed(1)} µs/req, ` +
            `load generator${endpointCount > 0 ? ' and receiver' : ''} ${receiverUs.toFixed(1)} µs/req, errors ${errors}\n`,
        );
      } finally {
        await removeEndpoints?.();
        await server.stop();
      }
    }
  }
} finally {
  cluster.stop();
  receiver.close();
}
for (const [name, { rates, cpuUs, databaseUs, receiverUs }] of measured) {
  process.stdout.write(
    `${name}: median ${median(rates).toFixed(0)} req/s, server ${median(cpuUs).toFixed(1)} µs/req, database ${median(databaseUs).toFixed(1)} µs/req, ` +
      `load generator${endpointCount > 0 ? ' and receiver' : ''} ${median(receiverUs).toFixed(1)} µs/req\n`,
  );
}
