/*
 * `npm run bench:writes [-- --seconds S] [--rounds N] [--backend postgres|pglite|both]
 * [--users N] [--connections N] [--cpu-prof] [--waits]`: every write of the service priced against the plain one.
 * `POST /users`, `PATCH /users/{email}` (a new first name) and `DELETE /users/{email}` of the
 * service, and the same three requests to the bare Fastify server of bench/plain-writes.ts
 * (user, apps and one count row per status, with the SQL a developer would write by hand:
 * no audit row, no event, no multi-level counts), on a throw-away PostgreSQL cluster and on
 * embedded PGlite, 10 connections (or `--connections`). The two servers take turns (service, plain, plain,
 * service, … over `rounds`), one at a time, each on a workspace of its own seeded with
 * `users` users; the ratio of each write is the service's mean rate over the plain route's,
 * and beside it the CPU per request of the server process and of the database (PostgreSQL's
 * backends; PGlite runs inside the server process). Goal: ≥ 0.8× (docs/performance.md, "Writes against the plain SQL").
 * With `--waits` (PostgreSQL), what the server's connections were doing during each measured
 * window: `pg_stat_activity` sampled every 10 ms, the commonest (state, wait event, statement).
 * With `--perf DIR` (Linux `perf` installed), each of the service's measured windows is also
 * recorded across the whole machine into DIR and summarized by process and kind of work
 * (bench/system-profile.ts). With `--json FILE`, each write's figures are also written to FILE ({@link WriteFigures} per
 * backend), which `npm run bench` reads (it passes `--skip-build`: it built both servers itself).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { freePort } from '../harness/free-port.ts';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { openDatabase } from '../src/storage/database.ts';
import { buildFrameworkCeiling, PLAIN_WRITES_SCRIPT } from './framework-ceiling-build.ts';
import { runHttpLoad, type HttpRequestSpec } from './http-load.ts';
import { watchMachineLoad } from './machine-load.ts';
import { PERF_NODE_FLAGS, recordSystemProfile, removePerfMap } from './system-profile.ts';
import { WRITES, type Write, type WriteFigures, type WriteSide } from './write-figures.ts';
import { buildService, CPU_PROFILE_FLAGS, postmasterPid, sampleUsage, SERVER_SCRIPT, startServer } from './processes.ts';
import { addRequest, patchRequest, removalCursor, removeRequest } from './requests.ts';
import { seedProducts, seedWorkspaces, vacuumAnalyze, withSeedingClient, type RunSql, type SeededWorkspace } from './seed.ts';

const load = watchMachineLoad();

const { values: options } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    backend: { type: 'string', default: 'both' },
    users: { type: 'string', default: '40000' },
    'cpu-prof': { type: 'boolean', default: false },
    waits: { type: 'boolean', default: false },
    connections: { type: 'string', default: '10' },
    json: { type: 'string' },
    perf: { type: 'string' },
    'skip-build': { type: 'boolean', default: false },
  },
});
const SECONDS = Number(options.seconds);
const ROUNDS = Number(options.rounds);
const USERS = Number(options.users);
const CONNECTIONS = Number(options.connections);
const NODE_FLAGS = ['--max-old-space-size=128', ...(options['cpu-prof'] ? CPU_PROFILE_FLAGS : []), ...(options.perf ? PERF_NODE_FLAGS : [])];
/** Seeded users 2…PATCHED are changed by PATCH (over and over); the rest are deactivated, each once. */
const PATCHED = 2_000;

/** One write measured on one server: rate and CPU per request (µs) of the server and the database. */
interface Sample {
  readonly perSecond: number;
  readonly serverUs: number;
  readonly databaseUs: number;
  readonly errors: number;
}

/** The requests of one workspace: unique adds, PATCHes cycling over users 2…PATCHED, removals each once. */
function requestsOf(ws: SeededWorkspace): Record<Write, () => HttpRequestSpec> {
  let patched = 0;
  const removal = removalCursor(ws, PATCHED + 1, ws.users);
  return {
    POST: () => addRequest(ws),
    PATCH: () => patchRequest(ws, `u${2 + (patched++ % (PATCHED - 1))}@${ws.subdomain}.example`),
    DELETE: () => removeRequest(ws, removal()),
  };
}

const perRequest = (cpuPercent: number, perSecond: number) => (cpuPercent / 100 / perSecond) * 1e6;

/** Measures the three writes on the server at `port` (its pid `pid`; the database's CPU under `databasePid`). */
async function measureWrites(
  port: number,
  pid: number,
  databasePid: number | undefined,
  requests: Record<Write, () => HttpRequestSpec>,
  activity: (() => () => Promise<string>) | undefined,
  profile: ((write: Write) => Promise<string>) | undefined,
): Promise<Record<Write, Sample>> {
  const result = {} as Record<Write, Sample>;
  for (const write of WRITES) {
    const next = requests[write];
    await runHttpLoad({ port, connections: CONNECTIONS, seconds: 1, next });
    const server = sampleUsage(pid);
    const database = databasePid === undefined ? undefined : sampleUsage(databasePid);
    const waits = activity?.();
    const recorded = profile?.(write);
    const measured = await runHttpLoad({ port, connections: CONNECTIONS, seconds: SECONDS, next });
    if (waits) process.stdout.write(`  ${write} on :${port}, commonest activity: ${await waits()}\n`);
    if (recorded) process.stdout.write(`  ${write} on :${port}, where the machine's CPU went:\n${(await recorded).replace(/^/gm, '    ')}\n`);
    result[write] = {
      perSecond: measured.perSecond,
      serverUs: perRequest(server.stop().cpuPercent, measured.perSecond),
      databaseUs: database ? perRequest(database.stop().cpuPercent, measured.perSecond) : 0,
      errors: measured.errors,
    };
  }
  return result;
}

/**
 * Starts sampling what the other client connections of the database at `url` do, every 10 ms;
 * the returned function stops and describes the six commonest (state, wait event, statement)
 * with their share of the samples.
 */
function sampleActivity(url: string): () => Promise<string> {
  const client = new pg.Client({ connectionString: url });
  const seen = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ what: string }>(
        `select coalesce(state, '?') || ' ' || coalesce(wait_event_type || ':' || wait_event, 'cpu') || ' ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 70) as what
         from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()`,
      );
      samples += 1;
      for (const { what } of rows) seen.set(what, (seen.get(what) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await client.end();
  })();
  return async () => {
    running = false;
    await loop;
    return [...seen]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([what, n]) => `${(n / samples).toFixed(1)} × [${what}]`)
      .join('; ');
  };
}

/** A backend: how to start either server on it, and where its database's CPU is. */
interface Backend {
  readonly name: string;
  readonly service: SeededWorkspace;
  readonly plain: SeededWorkspace;
  readonly serviceEnv: Record<string, string>;
  readonly plainEnv: Record<string, string>;
  readonly databasePid: number | undefined;
  /** With `--waits`: samples the database's connections during a window. */
  readonly activity?: () => () => Promise<string>;
}

const figures: WriteFigures[] = [];

/** Runs the rounds on a backend and prints each write's rates, CPU and ratio (and keeps them for `--json`). */
async function compare(backend: Backend): Promise<void> {
  const samples: Record<'service' | 'plain', Array<Record<Write, Sample>>> = { service: [], plain: [] };
  const requests = { service: requestsOf(backend.service), plain: requestsOf(backend.plain) };
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = round % 2 === 0 ? (['service', 'plain'] as const) : (['plain', 'service'] as const);
    for (const which of order) {
      const script = which === 'service' ? SERVER_SCRIPT : PLAIN_WRITES_SCRIPT;
      const env = which === 'service' ? backend.serviceEnv : backend.plainEnv;
      const server = await startServer(script, { LOG_LEVEL: 'info', ...env }, await freePort(), { nodeArgs: NODE_FLAGS });
      const perfDir = options.perf;
      const profile = perfDir
        ? (write: Write) =>
            recordSystemProfile(join(perfDir, `${backend.name}-${which}-${round + 1}-${write}.data`), SECONDS, server.pid, process.pid).then(
              (summary) => `${which} server, turn ${round + 1}\n${summary}`,
            )
        : undefined;
      try {
        samples[which].push(await measureWrites(server.port, server.pid, backend.databasePid, requests[which], backend.activity, profile));
      } finally {
        await server.stop();
        removePerfMap(server.pid);
      }
    }
  }
  const mean = (list: Array<Record<Write, Sample>>, write: Write, key: keyof Sample) =>
    list.reduce((sum, s) => sum + s[write][key], 0) / list.length;
  for (const write of WRITES) {
    const line = (which: 'service' | 'plain') =>
      `${samples[which].map((s) => s[write].perSecond.toFixed(0)).join('/')} req/s (server ${mean(samples[which], write, 'serverUs').toFixed(0)} µs, ` +
      `database ${mean(samples[which], write, 'databaseUs').toFixed(0)} µs per request, errors ${mean(samples[which], write, 'errors')})`;
    const ratio = mean(samples.service, write, 'perSecond') / mean(samples.plain, write, 'perSecond');
    const cpu = (which: 'service' | 'plain') => mean(samples[which], write, 'serverUs') + mean(samples[which], write, 'databaseUs');
    process.stdout.write(
      `${backend.name} ${write}: service ${line('service')}; plain ${line('plain')}; ` +
        `ratio ${load.ratio(ratio)} by rate, ${load.ratio(cpu('plain') / cpu('service'))} by server + database CPU per request\n`,
    );
    const side = (which: 'service' | 'plain'): WriteSide => ({
      rates: samples[which].map((s) => s[write].perSecond),
      perSecond: mean(samples[which], write, 'perSecond'),
      serverUs: mean(samples[which], write, 'serverUs'),
      databaseUs: mean(samples[which], write, 'databaseUs'),
      errors: samples[which].reduce((sum, s) => sum + s[write].errors, 0),
    });
    figures.push({ backend: backend.name, write, service: side('service'), plain: side('plain'), byRate: ratio, byCpu: cpu('plain') / cpu('service') });
  }
}

/** Seeds the catalogue and the two workspaces with `seed`. */
async function seedBoth(run: RunSql): Promise<{ service: SeededWorkspace; plain: SeededWorkspace }> {
  await seedProducts(run);
  const [service, plain] = await seedWorkspaces(run, ['writes', 'plain'], USERS);
  await vacuumAnalyze(run);
  return { service: service!, plain: plain! };
}

if (!options['skip-build']) {
  buildService();
  buildFrameworkCeiling();
}
process.stdout.write(`${SECONDS} s per write, ${ROUNDS} rounds\n`);
if (options.perf) mkdirSync(options.perf, { recursive: true });
if (options.backend !== 'pglite') {
  const cluster = await startPostgresCluster();
  if (!cluster) throw new Error('npm run bench:writes needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
  try {
    const seeded = await withSeedingClient(cluster.url, seedBoth);
    const env = { DATABASE_URL: cluster.url, RATE_LIMIT_PER_KEY: '0' };
    await compare({
      name: 'PostgreSQL',
      ...seeded,
      serviceEnv: env,
      plainEnv: { ...env, PLAIN_WORKSPACE_ID: String(seeded.plain.id) },
      databasePid: await postmasterPid(cluster.url),
      ...(options.waits ? { activity: () => sampleActivity(cluster.url) } : {}),
    });
  } finally {
    cluster.stop();
  }
}
if (options.backend !== 'postgres') {
  const scratch = mkdtempSync(join(tmpdir(), 'wum-writes-'));
  try {
    const dataDir = join(scratch, 'pglite');
    await (await openDatabase({ kind: 'pglite', dataDir })).close();
    const db = await PGlite.create(dataDir);
    const seeded = await seedBoth(async (text, params) => (await db.query<Record<string, unknown>>(text, params)).rows).finally(() => db.close());
    const env = { DATA_DIR: dataDir, RATE_LIMIT_PER_KEY: '0' };
    await compare({
      name: 'PGlite',
      ...seeded,
      serviceEnv: env,
      plainEnv: { ...env, PLAIN_WORKSPACE_ID: String(seeded.plain.id) },
      databasePid: undefined,
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
process.stdout.write(`${load.summary()}\n`);
if (options.json) writeFileSync(options.json, JSON.stringify(figures, null, 2));
