/*
 * `npm run bench:replicas [-- --quick]`: the replicas section of `npm run bench` alone (three
 * replicas behind HAProxy against one, and with REDIS_URL), on a small seeded workspace, in
 * about two minutes. Builds the service and starts a throw-away PostgreSQL cluster first.
 * See bench/replicas.ts and docs/performance.md.
 */
import { parseArgs } from 'node:util';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { buildService, postmasterPid, startingProdServers, type ServerHandle } from './processes.ts';
import { measureReplicas } from './replicas.ts';
import { watchMachineLoad } from './machine-load.ts';
import { renderReport } from './report.ts';
import { addRequest, listRequest } from './requests.ts';
import { seedSmallAndAdds } from './seed.ts';

const load = watchMachineLoad();
const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const seconds = args.quick ? 3 : 10;

buildService();
const cluster = await startPostgresCluster();
if (!cluster) throw new Error('npm run bench:replicas needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
const servers: ServerHandle[] = [];
try {
  const { small, adds } = await seedSmallAndAdds(cluster.url);
  const databasePid = await postmasterPid(cluster.url);
  const section = await measureReplicas({
    env: { DATABASE_URL: cluster.url, RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'info' },
    start: startingProdServers(servers),
    databasePid,
    connections: 10,
    warmupSeconds: args.quick ? 1 : 2,
    seconds,
    scenarios: [
      { scenario: 'GET /users page 1 of 10000', next: () => listRequest(small, 1) },
      { scenario: 'POST /users (unique emails)', next: () => addRequest(adds) },
    ],
    log: (message) => process.stderr.write(`${message}\n`),
  });
  process.stdout.write(`\n10 connections, ${seconds} s measured per row; node --max-old-space-size=128; RATE_LIMIT_PER_KEY=0 unless said\n\n`);
  process.stdout.write(`${renderReport([section], load)}\n`);
} finally {
  for (const server of servers) await server.stop().catch(() => {});
  cluster.stop();
}
