/*
 * `node --import tsx bench/compare-builds.ts NAME=SERVER_JS … [--rounds N] [--seconds S]
 * [--warmup S] [--scenario products|list|add]`: `GET /products` (or `GET /users` page 1 of the
 * 10,000 users, `--scenario list`, or `POST /users` of new users, `--scenario add`) against several compiled servers, taken in turn round after
 * round against one seeded PostgreSQL, so that a before/after comparison shares the
 * machine's moments (on a shared machine the rate moves more between minutes than between
 * builds). `NAME=bare` is the bare Fastify server of bench/framework-ceiling.ts. Build each
 * variant at its commit with `npx tsc -p tsconfig.build.json --outDir bench-profiles/dist-NAME`
 * (the compiled code finds the migrations from the package root, so any folder inside the
 * checkout works). Prints each round's rate and the server's and the database's CPU per request, then the medians.
 * See docs/performance.md, "The fixed cost of a request".
 */
import { parseArgs } from 'node:util';
import { freePort } from '../harness/free-port.ts';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { buildFrameworkCeiling, CEILING_SCRIPT } from './framework-ceiling-build.ts';
import { runHttpLoad } from './http-load.ts';
import { postmasterPid, sampleUsage, startServer } from './processes.ts';
import { addRequest, listRequest, productsRequest } from './requests.ts';
import { seedSmallAndAdds } from './seed.ts';

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '4' },
    warmup: { type: 'string', default: '6' },
    scenario: { type: 'string', default: 'products' },
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
if (!['products', 'list', 'add'].includes(options.scenario)) throw new Error(`unknown scenario ${options.scenario}: products, list or add`);
// The bare server answers only the catalogue: against page 1 it would measure another request.
if (options.scenario !== 'products' && variants.some((v) => v.script === CEILING_SCRIPT)) throw new Error('NAME=bare measures products only');
if (variants.some((v) => v.script === CEILING_SCRIPT)) buildFrameworkCeiling();

/** The median of `values` (the upper one of an even count). */
const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

const cluster = await startPostgresCluster();
if (!cluster) throw new Error('bench/compare-builds.ts needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
const measured = new Map<string, { rates: number[]; cpuUs: number[]; databaseUs: number[] }>(variants.map((v) => [v.name, { rates: [], cpuUs: [], databaseUs: [] }]));
try {
  const { small, adds } = await seedSmallAndAdds(cluster.url);
  const next = { list: () => listRequest(small, 1), add: () => addRequest(adds), products: () => productsRequest(small) }[options.scenario as 'list' | 'add' | 'products'];
  const database = await postmasterPid(cluster.url);
  for (let round = 1; round <= Number(options.rounds); round += 1) {
    for (const variant of variants) {
      const env = { DATABASE_URL: cluster.url, DATABASE_POOL_SIZE: '10', RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'info' };
      const server = await startServer(variant.script, env, await freePort(), { nodeArgs: ['--max-old-space-size=128'] });
      try {
        await runHttpLoad({ port: server.port, connections: 10, seconds: Number(options.warmup), next });
        const cpu = sampleUsage(server.pid, 250);
        const databaseCpu = sampleUsage(database, 250);
        const { perSecond, errors } = await runHttpLoad({ port: server.port, connections: 10, seconds: Number(options.seconds), next });
        const cpuUs = (cpu.stop().cpuPercent / 100 / perSecond) * 1e6;
        const databaseUs = (databaseCpu.stop().cpuPercent / 100 / perSecond) * 1e6;
        measured.get(variant.name)!.rates.push(perSecond);
        measured.get(variant.name)!.cpuUs.push(cpuUs);
        measured.get(variant.name)!.databaseUs.push(databaseUs);
        process.stdout.write(`round ${round} ${variant.name}: ${perSecond.toFixed(0)} req/s, server ${cpuUs.toFixed(1)} µs/req, database ${databaseUs.toFixed(1)} µs/req, errors ${errors}\n`);
      } finally {
        await server.stop();
      }
    }
  }
} finally {
  cluster.stop();
}
for (const [name, { rates, cpuUs, databaseUs }] of measured) {
  process.stdout.write(`${name}: median ${median(rates).toFixed(0)} req/s, server ${median(cpuUs).toFixed(1)} µs/req, database ${median(databaseUs).toFixed(1)} µs/req\n`);
}
