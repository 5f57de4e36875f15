/*
 * `npm run bench:audit-streams [-- --duration 60] [--rate 1000] [--seconds 10] [--format json|ocsf] [--no-import] [--cpu-prof]`:
 * audit streams keeping up (bench/audit-streams.ts), on a throw-away PostgreSQL cluster, with an
 * https, a splunk_hec, an s3 and a syslog stream to receivers on 127.0.0.1. `--duration` and
 * `--rate` set the paced window (seconds, changes per second), `--seconds` each `POST /users`
 * window at full speed, `--no-import` leaves out the last window (import jobs of `--rate` users a second for `--duration`),
 * `--cpu-prof` has the server write a V8 CPU profile into `bench-profiles/` as it stops. A shorter
 * or slower run than the defaults checks that the benchmark works; its figures are not the ones
 * docs/performance.md asks for. Needs rsyslog with rsyslog-gnutls (installed when missing and
 * run as root) and openssl. See docs/performance.md.
 */
import { parseArgs } from 'node:util';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { measureAuditStreams } from './audit-streams.ts';
import { watchMachineLoad } from './machine-load.ts';
import { buildService, CPU_PROFILE_FLAGS, postmasterPid, startingProdServers, type ServerHandle } from './processes.ts';
import { renderReport } from './report.ts';
import { seedProducts, seedWorkspaces, vacuumAnalyze, withSeedingClient } from './seed.ts';

const load = watchMachineLoad();
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    format: { type: 'string', default: 'json' },
    'no-import': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const positive = (name: string, text: string) => {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} takes a positive number, not "${text}"`);
  return value;
};
const duration = positive('duration', args.duration);
const rate = positive('rate', args.rate);
const seconds = positive('seconds', args.seconds);
if (args.format !== 'json' && args.format !== 'ocsf') throw new Error(`--format takes json or ocsf, not "${args.format}"`);
const format = args.format;
/** Users the paced PATCHes rename, picked at random. */
const SEEDED_USERS = 10_000;
const started = performance.now();
const log = (message: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);

buildService();
const cluster = await startPostgresCluster();
if (!cluster) throw new Error('npm run bench:audit-streams needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
const servers: ServerHandle[] = [];
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const server of servers) server.kill();
    cluster.stop();
    process.exit(130);
  });
}
try {
  const workspace = await withSeedingClient(cluster.url, async (run) => {
    await seedProducts(run);
    const [streams] = await seedWorkspaces(run, ['streams'], SEEDED_USERS);
    await vacuumAnalyze(run);
    return streams!;
  });
  const section = await measureAuditStreams({
    env: { DATABASE_URL: cluster.url, RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'warn' },
    start: startingProdServers(servers, args['cpu-prof'] ? CPU_PROFILE_FLAGS : []),
    databaseUrl: cluster.url,
    databasePid: await postmasterPid(cluster.url),
    workspace,
    connections: 10,
    warmupSeconds: 2,
    seconds,
    rate,
    pacedSeconds: duration,
    format,
    importWindow: !args['no-import'],
    log,
  });
  const short = duration < 60 || rate < 1000 ? ' — shorter or slower than the goal\'s 60 s at 1000/s: a check that it works, not a figure' : '';
  process.stdout.write(
    `\naudit streams: ${rate} changes/s paced for ${duration} s${short}; POST /users 10 connections, 2 s warm-up, ${seconds} s measured; node --max-old-space-size=128; RATE_LIMIT_PER_KEY=0; run took ${((performance.now() - started) / 60_000).toFixed(1)} min\n\n`,
  );
  process.stdout.write(`${renderReport([section], load)}\n`);
} finally {
  for (const server of servers) await server.stop().catch(() => {});
  cluster.stop();
}
