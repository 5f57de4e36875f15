/*
 * `npm run bench:webhooks [-- --quick] [--worker-process] [--statements] [--turns N] [--env NAME=value ...]`: the webhooks section of `npm run bench` alone
 * (`POST /users` with 1 and 3 endpoints against none; event-to-delivery latency at 500 changes
 * per second), on a throw-away PostgreSQL cluster, in a few minutes; with `--worker-process`,
 * the requests go to a server with `WEBHOOK_WORKER=false` and a second server delivers; with `--statements`, what each
 * statement cost PostgreSQL per change in each endpoint row's window (bench/statement-stats.ts). See bench/webhooks.ts and
 * docs/performance.md.
 */
import { parseArgs } from 'node:util';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { buildService, postmasterPid, startingProdServers, type ServerHandle } from './processes.ts';
import { watchMachineLoad } from './machine-load.ts';
import { renderReport } from './report.ts';
import { addRequest } from './requests.ts';
import { seedSmallAndAdds } from './seed.ts';
import { measureWebhooks } from './webhooks.ts';

const load = watchMachineLoad();
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'worker-process': { type: 'boolean', default: false },
    statements: { type: 'boolean', default: false },
    /** How many times the rows of none, one and three endpoints are taken in turn. */
    turns: { type: 'string', default: '2' },
    /** A setting of the servers, `NAME=value` (repeatable), e.g. `--env WEBHOOK_CONCURRENCY_PER_ENDPOINT=32`. */
    env: { type: 'string', multiple: true, default: [] },
  },
});
const settings = Object.fromEntries(
  args.env.map((pair) => {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`--env takes NAME=value, not "${pair}"`);
    return [pair.slice(0, at), pair.slice(at + 1)];
  }),
);
const seconds = args.quick ? 3 : 10;

buildService();
const cluster = await startPostgresCluster({ statementStats: args.statements });
if (!cluster) throw new Error('npm run bench:webhooks needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
const servers: ServerHandle[] = [];
try {
  const { adds } = await seedSmallAndAdds(cluster.url);
  const section = await measureWebhooks({
    env: { DATABASE_URL: cluster.url, RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'warn', ...settings },
    start: startingProdServers(servers),
    databasePid: await postmasterPid(cluster.url),
    connections: 10,
    warmupSeconds: args.quick ? 1 : 2,
    seconds,
    subdomain: adds.subdomain,
    add: () => addRequest(adds),
    workerProcess: args['worker-process'],
    statementStats: args.statements,
    turns: Number(args.turns),
    log: (message) => process.stderr.write(`${message}\n`),
  });
  const extra = Object.entries(settings).map(([name, value]) => `; ${name}=${value}`).join('');
  process.stdout.write(`\n10 connections, ${seconds} s measured per row; node --max-old-space-size=128; RATE_LIMIT_PER_KEY=0${extra}\n\n`);
  process.stdout.write(`${renderReport([section], load)}\n`);
} finally {
  for (const server of servers) await server.stop().catch(() => {});
  cluster.stop();
}
