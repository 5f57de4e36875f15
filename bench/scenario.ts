/*
 * `npm run bench:scenario -- <products|list|add|patch> [--pool-size N] [--unix-socket]
 * [--seconds S] [--warmup S] [--cpu-prof]`: one scenario of `npm run bench`, alone, on a
 * small seeded workspace (10,000 users; `patch` gives its users new first names, one after the other), for trying a setting or profiling the server: prints the rate,
 * the server's and the load generator's CPU per request. With `--cpu-prof` the server writes
 * a V8 CPU profile to `bench-profiles/` (open it in Chrome DevTools). `products` also
 * measures the bare Fastify constant JSON (bench/framework-ceiling.ts) right before and after
 * the service, and prints the service's rate against their mean: the fixed cost of a request.
 * Use `npm run bench` for the record. See docs/performance.md.
 */
import { parseArgs } from 'node:util';
import { freePort } from '../harness/free-port.ts';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { runHttpLoad } from './http-load.ts';
import { buildFrameworkCeiling, CEILING_SCRIPT } from './framework-ceiling-build.ts';
import type { HttpRequestSpec } from './http-load.ts';
import { watchMachineLoad } from './machine-load.ts';
import { buildService, CPU_PROFILE_FLAGS, sampleOwnCpu, sampleUsage, SERVER_SCRIPT, startServer } from './processes.ts';
import { addRequest, listRequest, patchRequest, productsRequest } from './requests.ts';
import { seededEmail, seedSmallAndAdds } from './seed.ts';

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'pool-size': { type: 'string', default: '10' },
    'unix-socket': { type: 'boolean', default: false },
    seconds: { type: 'string', default: '8' },
    // Unmeasured load before each measured window. On a busy machine V8's optimising compiler
    // (a background thread) may need more than the default to finish the service's request
    // path, which is far larger than the bare server's; until then its CPU per request is
    // the interpreter's (docs/performance.md).
    warmup: { type: 'string', default: '2' },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const scenario = positionals[0] ?? 'list';
if (!['products', 'list', 'add', 'patch'].includes(scenario)) throw new Error(`unknown scenario ${scenario}: products, list, add or patch`);

const load = watchMachineLoad();
buildService();
if (scenario === 'products') buildFrameworkCeiling();
const NODE_FLAGS = ['--max-old-space-size=128'];
const SECONDS = Number(options.seconds);
const WARMUP_SECONDS = Number(options.warmup);

const PROFILE_FLAGS = options['cpu-prof'] ? CPU_PROFILE_FLAGS : [];

/** The server's CPU time per request in µs, from its CPU use in percent of one core. */
const microsecondsPerRequest = (cpuPercent: number, perSecond: number) => (cpuPercent / 100 / perSecond) * 1e6;

/**
 * The bare Fastify route answering the catalogue as constant JSON: its requests per second
 * and its CPU time per request (µs), which the machine's other load disturbs less than the rate.
 */
async function bareProducts(): Promise<{ readonly perSecond: number; readonly cpuUs: number }> {
  const bare = await startServer(CEILING_SCRIPT, { LOG_LEVEL: 'info' }, await freePort(), { nodeArgs: [...NODE_FLAGS, ...PROFILE_FLAGS] });
  try {
    const next = (): HttpRequestSpec => ({ method: 'GET', path: '/api/external/v2/products', headers: { host: 'x.localhost' } });
    await runHttpLoad({ port: bare.port, connections: 10, seconds: WARMUP_SECONDS, next });
    const cpu = sampleUsage(bare.pid);
    const { perSecond } = await runHttpLoad({ port: bare.port, connections: 10, seconds: SECONDS, next });
    return { perSecond, cpuUs: microsecondsPerRequest(cpu.stop().cpuPercent, perSecond) };
  } finally {
    await bare.stop();
  }
}

const bareBefore = scenario === 'products' ? await bareProducts() : undefined;
const cluster = await startPostgresCluster();
if (!cluster) throw new Error('npm run bench:scenario needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
try {
  const { small, adds } = await seedSmallAndAdds(cluster.url);

  const server = await startServer(
    SERVER_SCRIPT,
    {
      DATABASE_URL: options['unix-socket'] ? cluster.socketUrl : cluster.url,
      DATABASE_POOL_SIZE: options['pool-size'],
      RATE_LIMIT_PER_KEY: '0',
      LOG_LEVEL: 'info',
    },
    await freePort(),
    { nodeArgs: [...NODE_FLAGS, ...PROFILE_FLAGS] },
  );
  try {
    let patched = 0;
    const next = {
      products: () => productsRequest(small),
      list: () => listRequest(small, 1),
      add: () => addRequest(adds),
      patch: () => patchRequest(small, seededEmail(small.subdomain, (patched++ % small.users) + 1)),
    }[scenario]!;
    await runHttpLoad({ port: server.port, connections: 10, seconds: WARMUP_SECONDS, next });
    const serverCpu = sampleUsage(server.pid);
    const ownCpu = sampleOwnCpu();
    const measured = await runHttpLoad({ port: server.port, connections: 10, seconds: SECONDS, next });
    const perRequest = (cpuPercent: number) => microsecondsPerRequest(cpuPercent, measured.perSecond).toFixed(0);
    const serverCpuUs = microsecondsPerRequest(serverCpu.stop().cpuPercent, measured.perSecond);
    process.stdout.write(
      `${scenario}: ${measured.perSecond.toFixed(0)} req/s, p99 ${measured.p99Ms.toFixed(1)} ms, errors ${measured.errors}; ` +
        `server ${serverCpuUs.toFixed(0)} µs/req, load generator ${perRequest(ownCpu.stop().cpuPercent)} µs/req\n`,
    );
    if (bareBefore !== undefined) {
      await server.stop();
      const bareAfter = await bareProducts();
      const rate = (bareBefore.perSecond + bareAfter.perSecond) / 2;
      const cpuUs = (bareBefore.cpuUs + bareAfter.cpuUs) / 2;
      process.stdout.write(
        `bare Fastify constant JSON: ${bareBefore.perSecond.toFixed(0)} req/s before, ${bareAfter.perSecond.toFixed(0)} after, ` +
          `server ${bareBefore.cpuUs.toFixed(0)} and ${bareAfter.cpuUs.toFixed(0)} µs/req; GET /products = ` +
          `${load.ratio(measured.perSecond / rate)} their mean rate, ${load.ratio(cpuUs / serverCpuUs)} by server CPU per request\n`,
      );
    }
  } finally {
    await server.stop();
  }
} finally {
  cluster.stop();
}
process.stdout.write(`${load.summary()}\n`);
