/*
 * `npm run bench:scenario -- <products|list|add> [--pool-size N] [--unix-socket]
 * [--seconds S] [--cpu-prof]`: one scenario of `npm run bench`, alone, on a small seeded
 * workspace (10,000 users), for trying a setting or profiling the server: prints the rate,
 * the server's and the load generator's CPU per request. With `--cpu-prof` the server writes
 * a V8 CPU profile to `bench-profiles/` (open it in Chrome DevTools). Not a baseline
 * comparison: use `npm run bench` for the record. See docs/performance.md.
 */
import { parseArgs } from 'node:util';
import { freePort, startPostgresCluster } from '../test/helpers/postgres-cluster.ts';
import { runHttpLoad } from './http-load.ts';
import { buildService, sampleOwnCpu, sampleUsage, startServer } from './processes.ts';
import { addRequest, listRequest, productsRequest } from './requests.ts';
import { seedSmallAndAdds } from './seed.ts';

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'pool-size': { type: 'string', default: '10' },
    'unix-socket': { type: 'boolean', default: false },
    seconds: { type: 'string', default: '8' },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const scenario = positionals[0] ?? 'list';
if (!['products', 'list', 'add'].includes(scenario)) throw new Error(`unknown scenario ${scenario}: products, list or add`);

buildService();
const cluster = await startPostgresCluster();
if (!cluster) throw new Error('npm run bench:scenario needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
try {
  const { small, adds } = await seedSmallAndAdds(cluster.url);

  const server = await startServer(
    'dist/http/server.js',
    {
      DATABASE_URL: options['unix-socket'] ? cluster.socketUrl : cluster.url,
      DATABASE_POOL_SIZE: options['pool-size'],
      RATE_LIMIT_PER_KEY: '0',
      LOG_LEVEL: 'info',
    },
    await freePort(),
    { nodeArgs: ['--max-old-space-size=128', ...(options['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir=bench-profiles'] : [])] },
  );
  try {
    const next = { products: () => productsRequest(small), list: () => listRequest(small, 1), add: () => addRequest(adds) }[scenario]!;
    await runHttpLoad({ port: server.port, connections: 10, seconds: 2, next });
    const serverCpu = sampleUsage(server.pid);
    const ownCpu = sampleOwnCpu();
    const measured = await runHttpLoad({ port: server.port, connections: 10, seconds: Number(options.seconds), next });
    const perRequest = (cpuPercent: number) => ((cpuPercent / 100 / measured.perSecond) * 1e6).toFixed(0);
    process.stdout.write(
      `${scenario}: ${measured.perSecond.toFixed(0)} req/s, p99 ${measured.p99Ms.toFixed(1)} ms, errors ${measured.errors}; ` +
        `server ${perRequest(serverCpu.stop().cpuPercent)} µs/req, load generator ${perRequest(ownCpu.stop().cpuPercent)} µs/req\n`,
    );
  } finally {
    await server.stop();
  }
} finally {
  cluster.stop();
}
