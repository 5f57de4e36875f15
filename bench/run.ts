/*
 * `npm run bench [-- --quick] [-- --json FILE]`: builds the service, starts a throw-away
 * PostgreSQL cluster, seeds data at scale, measures every scenario against the baselines
 * measured in the same run (a bare Fastify route; the service's own SQL replayed through
 * pg), then the same for 2 workers and for embedded PGlite, and prints one table.
 * Everything runs on 127.0.0.1; every load is bounded in time. See docs/performance.md.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import ts from 'typescript';
import { loadConfig } from '../src/config/load-config.ts';
import { buildApp } from '../src/http/app.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createIdempotencyStore } from '../src/storage/idempotency.queries.ts';
import { createStore } from '../src/storage/store.ts';
import { freePort, startPostgresCluster, type PostgresCluster } from '../test/helpers/postgres-cluster.ts';
import { sendRequest } from '../test/helpers/server-process.ts';
import { runHttpLoad, type HttpRequestSpec } from './http-load.ts';
import type { Measurement } from './measurement.ts';
import { sampleUsage, startServer, type ServerHandle } from './processes.ts';
import { renderReport, ratio, type ReportRow, type ReportSection } from './report.ts';
import { seedProducts, seedWorkspaces, seededEmail, vacuumAnalyze, type RunSql, type SeededWorkspace } from './seed.ts';
import { recordQueries, replaySql, toTemplate } from './sql-replay.ts';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    'log-level': { type: 'string', default: 'info' },
  },
});

/** Sizes and durations: the full run (under 15 minutes on 2 cores) and a quick one for development. */
const PLAN = args.quick
  ? { warmup: 1, seconds: 3, small: 10_000, big: 100_000, tenants: 100, tenantUsers: 1_000, removals: 40_000, mixed: 10_000 }
  : { warmup: 2, seconds: 10, small: 10_000, big: 1_000_000, tenants: 1_000, tenantUsers: 1_000, removals: 200_000, mixed: 10_000 };
const CONNECTIONS = 10;
const PAGE_SIZE = 30;
const API = '/api/external/v2';
const SERVER_SCRIPT = 'dist/http/server.js';
const CEILING_DIR = join('node_modules', '.cache', 'wum-bench');
const CEILING_SCRIPT = join(CEILING_DIR, 'framework-ceiling.mjs');
const started = performance.now();

function log(message: string): void {
  const elapsed = ((performance.now() - started) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`[${elapsed} s] ${message}\n`);
}

async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const result = await work();
  log(`${label}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return result;
}

/** Compiles the service (npm run build) and the framework-ceiling server to plain JavaScript. */
function build(): void {
  const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('npm run build failed');
  const source = readFileSync('bench/framework-ceiling.ts', 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  mkdirSync(CEILING_DIR, { recursive: true });
  writeFileSync(CEILING_SCRIPT, outputText);
}

// ---------------------------------------------------------------- requests

let emailCounter = 0;
const runTag = Date.now().toString(36);

function headersOf(ws: SeededWorkspace, json = false): Record<string, string> {
  return {
    host: `${ws.subdomain}.localhost`,
    'x-api-key': ws.apiKey,
    ...(json ? { 'content-type': 'application/json' } : {}),
  };
}

function uniqueEmail(ws: SeededWorkspace): string {
  emailCounter += 1;
  return `n${runTag}-${emailCounter}@${ws.subdomain}.example`;
}

function addRequest(ws: SeededWorkspace): HttpRequestSpec {
  const user = {
    email: uniqueEmail(ws),
    role: 'non_owner',
    first_name: 'Bench',
    apps: [
      { name: 'crm', role: 'member' },
      { name: 'analytics', role: 'viewer' },
    ],
  };
  return { method: 'POST', path: `${API}/users`, headers: headersOf(ws, true), body: JSON.stringify({ user }) };
}

function listRequest(ws: SeededWorkspace, page: number): HttpRequestSpec {
  return { method: 'GET', path: `${API}/users?page_number=${page}&page_size=${PAGE_SIZE}`, headers: headersOf(ws) };
}

function removeRequest(ws: SeededWorkspace, email: string): HttpRequestSpec {
  return { method: 'DELETE', path: `${API}/users/${encodeURIComponent(email)}`, headers: headersOf(ws) };
}

/** Hands out seeded users to deactivate, each once (user 1 is the owner and is never taken). */
function removalCursor(ws: SeededWorkspace, from: number, to: number): () => string {
  let next = from;
  return () => {
    if (next > to) throw new Error(`ran out of users to remove in ${ws.subdomain}; seed more`);
    return seededEmail(ws.subdomain, next++);
  };
}

function lastPage(users: number): number {
  return Math.ceil(users / PAGE_SIZE);
}

// ---------------------------------------------------------------- measuring

interface Context {
  readonly postmasterPid: number;
}

async function measureHttp(
  context: Context | undefined,
  server: { pid: number; port: number },
  next: () => HttpRequestSpec,
): Promise<Pick<ReportRow, 'measured' | 'server' | 'database'>> {
  await runHttpLoad({ port: server.port, connections: CONNECTIONS, seconds: PLAN.warmup, next });
  const serverUsage = sampleUsage(server.pid);
  const databaseUsage = context ? sampleUsage(context.postmasterPid) : undefined;
  const measured = await runHttpLoad({ port: server.port, connections: CONNECTIONS, seconds: PLAN.seconds, next });
  return { measured, server: serverUsage.stop(), ...(databaseUsage ? { database: databaseUsage.stop() } : {}) };
}

function serverEnv(databaseUrl: string | undefined, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    RATE_LIMIT_PER_KEY: '0',
    LOG_LEVEL: args['log-level']!,
    ...extra,
  };
}

async function postmasterPid(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    const stat = readFileSync(`/proc/${rows[0]!.pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } finally {
    await client.end();
  }
}

function runOn(client: pg.Client | pg.Pool): RunSql {
  return async (text, params) => (await client.query(text, params as unknown[])).rows;
}

// ---------------------------------------------------------------- phases

interface Seeded {
  readonly small: SeededWorkspace;
  readonly big: SeededWorkspace;
  readonly adds: SeededWorkspace;
  readonly removals: SeededWorkspace;
  readonly mixed: SeededWorkspace;
  readonly tenants: readonly SeededWorkspace[];
}

async function seedPostgres(url: string): Promise<Seeded> {
  const opened = await openDatabase({ kind: 'postgres', url, poolSize: 1 });
  await opened.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const run = runOn(client);
    await seedProducts(run);
    const [small, mixed] = await timed(`seed 2 × ${PLAN.small} users`, () => seedWorkspaces(run, ['small', 'mixed'], PLAN.small));
    const [big] = await timed(`seed 1 × ${PLAN.big} users`, () => seedWorkspaces(run, ['big'], PLAN.big));
    const [removals] = await timed(`seed 1 × ${PLAN.removals} users`, () => seedWorkspaces(run, ['removals'], PLAN.removals));
    const [adds] = await seedWorkspaces(run, ['adds'], 1);
    const names = Array.from({ length: PLAN.tenants }, (_, i) => `t${String(i + 1).padStart(4, '0')}`);
    const tenants = await timed(`seed ${PLAN.tenants} × ${PLAN.tenantUsers} users`, () => seedWorkspaces(run, names, PLAN.tenantUsers));
    await timed('vacuum analyze', () => vacuumAnalyze(run));
    return { small: small!, big: big!, adds: adds!, removals: removals!, mixed: mixed!, tenants };
  } finally {
    await client.end();
  }
}

/** The database ceilings: each endpoint's SQL recorded in process, then replayed through pg. */
async function measureDatabaseCeilings(url: string, seeded: Seeded, context: Context, removeFrom: number, removeTo: number) {
  const database = await openDatabase({ kind: 'postgres', url, poolSize: 1 });
  const app = await buildApp(loadConfig({ DATABASE_URL: url, RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'silent' }), {
    store: createStore(database.db),
    idempotency: createIdempotencyStore(database.db),
    ping: database.ping,
    logger: false,
  });
  const send = async (spec: HttpRequestSpec) => {
    const response = await app.inject({
      method: spec.method,
      url: spec.path,
      headers: spec.headers,
      ...(spec.body ? { payload: spec.body } : {}),
    });
    if (response.statusCode >= 300) throw new Error(`${spec.method} ${spec.path} → ${response.statusCode} ${response.body}`);
  };
  /** Sends `make()` once to warm caches, then records the SQL of a second one. */
  const record = async (make: () => HttpRequestSpec) => {
    await send(make());
    await new Promise((r) => setTimeout(r, 100));
    let spec: HttpRequestSpec | undefined;
    const queries = await recordQueries(async () => {
      spec = make();
      await send(spec);
    });
    return { queries, spec: spec! };
  };
  const replay = async (label: string, template: ReturnType<typeof toTemplate>, nextEmail?: () => string) => {
    const usage = sampleUsage(context.postmasterPid);
    const measured = await replaySql(template, {
      url,
      clients: CONNECTIONS,
      warmupSeconds: PLAN.warmup,
      seconds: PLAN.seconds,
      ...(nextEmail ? { nextEmail } : {}),
    });
    const row: ReportRow = { scenario: label, measured, database: usage.stop() };
    log(`${label}: ${measured.perSecond.toFixed(0)}/s`);
    return row;
  };
  const ceilings: Record<string, ReportRow> = {};
  const sqlOf: Record<string, string[]> = {};
  try {
    {
      const { queries, spec } = await record(() => addRequest(seeded.adds));
      const email = (JSON.parse(spec.body!) as { user: { email: string } }).user.email;
      sqlOf.add = queries.map((q) => q.text);
      ceilings.add = await replay('POST /users SQL', toTemplate(queries, email), () => uniqueEmail(seeded.adds));
    }
    for (const [key, ws, page] of [
      ['listSmallFirst', seeded.small, 1],
      ['listSmallLast', seeded.small, lastPage(seeded.small.users)],
      ['listBigFirst', seeded.big, 1],
      ['listBigLast', seeded.big, lastPage(seeded.big.users)],
    ] as const) {
      const { queries } = await record(() => listRequest(ws, page));
      sqlOf[key] = queries.map((q) => q.text);
      ceilings[key] = await replay(`GET /users page ${page} of ${ws.users} SQL`, toTemplate(queries));
    }
    {
      const nextRemoval = removalCursor(seeded.removals, removeFrom, removeTo);
      const { queries, spec } = await record(() => removeRequest(seeded.removals, nextRemoval()));
      const email = decodeURIComponent(spec.path.slice(spec.path.lastIndexOf('/') + 1));
      sqlOf.remove = queries.map((q) => q.text);
      ceilings.remove = await replay('DELETE /users/{email} SQL', toTemplate(queries, email), nextRemoval);
    }
  } finally {
    await app.close();
    await database.close();
  }
  return { ceilings, sqlOf };
}

async function pgVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v;
  } finally {
    await client.end();
  }
}

async function countActive(url: string, ws: SeededWorkspace): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      "select count(*) as n from users where workspace_id = $1 and status = 'active'",
      [ws.id],
    );
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}

async function totalCount(port: number, spec: HttpRequestSpec): Promise<number> {
  const response = await sendRequest(port, spec.method, spec.path, { host: spec.headers.host!, headers: spec.headers });
  return (response.json() as { total_count: number }).total_count;
}

function target(text: string, met: boolean) {
  return { text, met };
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  build();
  const machine = {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGb: (totalmem() / 1024 ** 3).toFixed(0),
    node: process.version,
    loadAtStart: loadavg().map((l) => l.toFixed(2)).join(' '),
  };
  const cluster: PostgresCluster | undefined = await startPostgresCluster();
  if (!cluster) throw new Error('npm run bench needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
  const scratch = mkdtempSync(join(tmpdir(), 'wum-bench-'));
  const servers: ServerHandle[] = [];
  // Interrupted (Ctrl-C, timeout): leave no server or cluster behind.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const server of servers) server.kill();
      cluster.stop();
      rmSync(scratch, { recursive: true, force: true });
      process.exit(130);
    });
  }
  const sections: ReportSection[] = [];
  try {
    const admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query('create database wum_bench');
    await admin.end();
    const url = cluster.url.replace(/\/postgres$/, '/wum_bench');
    const postgresVersion = await pgVersion(url);
    const seeded = await timed('seed PostgreSQL', () => seedPostgres(url));
    const context: Context = { postmasterPid: await postmasterPid(url) };
    const half = Math.floor(PLAN.removals / 2);

    // Baselines.
    const framework = await (async () => {
      const server = await startServer(CEILING_SCRIPT, serverEnv(undefined), await freePort());
      servers.push(server);
      const row = await measureHttp(undefined, server, () => ({ method: 'GET', path: `${API}/products`, headers: { host: 'x.localhost' } }));
      await server.stop();
      return { scenario: 'framework ceiling: bare Fastify, constant JSON', ...row } satisfies ReportRow;
    })();
    log(`framework ceiling: ${framework.measured!.perSecond.toFixed(0)}/s`);
    const { ceilings, sqlOf } = await measureDatabaseCeilings(url, seeded, context, half + 1, PLAN.removals);
    sections.push({ title: 'Baselines (same run)', rows: [framework, ...Object.values(ceilings)] });
    const base = (key: string, label = 'db ceiling') => ({ label, perSecond: ceilings[key]!.measured!.perSecond });

    // PostgreSQL, 1 worker.
    const removeHttp = removalCursor(seeded.removals, 2, half);
    const removeMixed = removalCursor(seeded.mixed, 2, seeded.mixed.users);
    const bigLast = lastPage(seeded.big.users);
    const scenarios = () => {
      return {
        products: { scenario: 'GET /products', next: () => ({ method: 'GET', path: `${API}/products`, headers: headersOf(seeded.small) }) as HttpRequestSpec },
        add: { scenario: 'POST /users (unique emails)', next: () => addRequest(seeded.adds) },
        smallFirst: { scenario: `GET /users page 1 of ${seeded.small.users}`, next: () => listRequest(seeded.small, 1) },
        smallLast: { scenario: `GET /users last page of ${seeded.small.users}`, next: () => listRequest(seeded.small, lastPage(seeded.small.users)) },
        bigFirst: { scenario: `GET /users page 1 of ${seeded.big.users}`, next: () => listRequest(seeded.big, 1) },
        bigLast: { scenario: `GET /users last page of ${seeded.big.users}`, next: () => listRequest(seeded.big, bigLast) },
        bigMiddle: { scenario: `GET /users middle page of ${seeded.big.users}`, next: () => listRequest(seeded.big, Math.ceil(bigLast / 2)) },
        bigRandom: { scenario: `GET /users random page of ${seeded.big.users}`, next: () => listRequest(seeded.big, 1 + Math.floor(Math.random() * bigLast)) },
        remove: { scenario: 'DELETE /users/{email}', next: () => removeRequest(seeded.removals, removeHttp()) },
        mixed: {
          scenario: 'mixed: 70% list, 20% add, 10% remove',
          next: (): HttpRequestSpec => {
            const dice = Math.random();
            if (dice < 0.7) return listRequest(seeded.mixed, 1);
            if (dice < 0.9) return addRequest(seeded.mixed);
            return removeRequest(seeded.mixed, removeMixed());
          },
        },
        oneTenant: { scenario: `GET /users page 1, 1 workspace of ${seeded.tenants.length}`, next: () => listRequest(seeded.tenants[0]!, 1) },
        anyTenant: {
          scenario: `GET /users page 1, random workspace of ${seeded.tenants.length}`,
          next: () => listRequest(seeded.tenants[Math.floor(Math.random() * seeded.tenants.length)]!, 1),
        },
      };
    };
    const one = scenarios();
    const runServer = async (env: Record<string, string>) => {
      const server = await startServer(SERVER_SCRIPT, env, await freePort());
      servers.push(server);
      return server;
    };
    const measureAll = async (server: ServerHandle, list: ReadonlyArray<{ scenario: string; next: () => HttpRequestSpec }>) => {
      const rows: Record<string, ReportRow> = {};
      for (const s of list) {
        rows[s.scenario] = { scenario: s.scenario, ...(await measureHttp(context, server, s.next)) };
        log(`${s.scenario}: ${rows[s.scenario]!.measured!.perSecond.toFixed(0)}/s p99 ${rows[s.scenario]!.measured!.p99Ms.toFixed(1)} ms`);
      }
      return rows;
    };

    const w1 = await runServer(serverEnv(url));
    const r1 = await measureAll(w1, [
      one.products, one.add, one.smallFirst, one.smallLast, one.bigFirst, one.bigLast, one.bigMiddle, one.bigRandom,
      one.remove, one.mixed, one.oneTenant, one.anyTenant,
    ]);
    const exactTotal = (await totalCount(w1.port, listRequest(seeded.big, bigLast))) === (await countActive(url, seeded.big));
    await w1.stop();
    const p99Target = (row: ReportRow) => target('p99 ≤ 50 ms', row.measured!.p99Ms <= 50 && row.measured!.errors === 0);
    const rowsW1: ReportRow[] = [
      { ...r1[one.products.scenario]!, baseline: { label: 'framework', perSecond: framework.measured!.perSecond } },
      { ...r1[one.add.scenario]!, baseline: base('add') },
      { ...r1[one.smallFirst.scenario]!, baseline: base('listSmallFirst') },
      { ...r1[one.smallLast.scenario]!, baseline: base('listSmallLast') },
      { ...r1[one.bigFirst.scenario]!, baseline: base('listBigFirst') },
      { ...r1[one.bigLast.scenario]!, baseline: base('listBigLast') },
      r1[one.bigMiddle.scenario]!,
      r1[one.bigRandom.scenario]!,
      { ...r1[one.remove.scenario]!, baseline: base('remove') },
      r1[one.mixed.scenario]!,
      r1[one.oneTenant.scenario]!,
      { ...r1[one.anyTenant.scenario]!, baseline: { label: '1 workspace', perSecond: r1[one.oneTenant.scenario]!.measured!.perSecond } },
    ];
    const withTargets = rowsW1.map((row): ReportRow => {
      const r = ratio(row) ?? 0;
      if (row.scenario === one.products.scenario) return { ...row, target: target('≥ 0.6×', r >= 0.6) };
      if (row.scenario === one.add.scenario || row.scenario === one.smallFirst.scenario) return { ...row, target: target('≥ 0.7×', r >= 0.7) };
      if ([one.bigFirst, one.bigLast, one.bigMiddle, one.bigRandom].some((s) => s.scenario === row.scenario)) return { ...row, target: p99Target(row) };
      if (row.scenario === one.mixed.scenario) return { ...row, target: target('RSS ≤ 200 MB', (row.server?.maxRssBytes ?? Infinity) <= 200 * 1024 * 1024) };
      return row;
    });
    sections.push({ title: 'PostgreSQL, WORKERS=1', rows: [...withTargets, { scenario: `exact total_count at ${seeded.big.users}`, note: exactTotal ? 'yes' : 'NO' }] });

    // PostgreSQL, 2 workers.
    const w2 = await runServer(serverEnv(url, { WORKERS: '2' }));
    const two = scenarios();
    const r2 = await measureAll(w2, [two.products, two.add, two.smallFirst, two.mixed]);
    await w2.stop();
    sections.push({
      title: 'PostgreSQL, WORKERS=2',
      rows: [two.products, two.add, two.smallFirst, two.mixed].map((s) => {
        const row = r2[s.scenario]!;
        const single = r1[s.scenario]!.measured!.perSecond;
        return {
          ...row,
          baseline: { label: 'WORKERS=1', perSecond: single },
          ...(s === two.mixed ? { target: target('RSS ≤ 200 MB/worker', (row.server?.maxRssBytes ?? Infinity) <= 200 * 1024 * 1024) } : {}),
        };
      }),
    });

    // Embedded PGlite.
    const dataDir = join(scratch, 'pglite');
    const empty = await runServer(serverEnv(undefined, { DATA_DIR: dataDir }));
    const emptyStart = empty.startupMs;
    await empty.stop();
    const pglite = await timed(`seed PGlite 1 × ${PLAN.big} users`, async () => {
      const db = await PGlite.create(dataDir);
      try {
        const run: RunSql = async (text, params) => (await db.query<Record<string, unknown>>(text, params)).rows;
        const [ws] = await seedWorkspaces(run, ['big'], PLAN.big);
        const [adds] = await seedWorkspaces(run, ['adds'], 1);
        await vacuumAnalyze(run);
        return { big: ws!, adds: adds! };
      } finally {
        await db.close();
      }
    });
    const loaded = await runServer(serverEnv(undefined, { DATA_DIR: dataDir }));
    const pgliteRows = await measureAll(loaded, [
      { scenario: 'PGlite GET /products', next: () => ({ method: 'GET', path: `${API}/products`, headers: headersOf(pglite.big) }) },
      { scenario: `PGlite GET /users page 1 of ${PLAN.big}`, next: () => listRequest(pglite.big, 1) },
      { scenario: `PGlite GET /users last page of ${PLAN.big}`, next: () => listRequest(pglite.big, bigLast) },
      { scenario: 'PGlite POST /users (unique emails)', next: () => addRequest(pglite.adds) },
    ]);
    await loaded.stop();
    const pgEquivalent = [one.products, one.bigFirst, one.bigLast, one.add];
    sections.push({
      title: 'Embedded PGlite (DATA_DIR)',
      rows: [
        { scenario: 'start-up, empty data dir (migrate + demo seed)', note: `${emptyStart.toFixed(0)} ms` },
        { scenario: `start-up, ${PLAN.big}-user data dir`, note: `${loaded.startupMs.toFixed(0)} ms` },
        ...Object.values(pgliteRows).map((row, i) => ({
          ...row,
          baseline: { label: 'PostgreSQL', perSecond: r1[pgEquivalent[i]!.scenario]!.measured!.perSecond },
        })),
      ],
    });

    const elapsed = (performance.now() - started) / 1000;
    const header = [
      `wum benchmark${args.quick ? ' (--quick: smaller data, 3 s scenarios; not for the record)' : ''}`,
      `machine: ${machine.cores} cores (${machine.cpu}), ${machine.memoryGb} GB; Node ${machine.node}; PostgreSQL ${postgresVersion}; load average at start ${machine.loadAtStart}`,
      `each scenario: ${CONNECTIONS} connections, ${PLAN.warmup} s warm-up, ${PLAN.seconds} s measured; LOG_LEVEL=${args['log-level']}; RATE_LIMIT_PER_KEY=0; DATABASE_POOL_SIZE=10 per worker`,
      `run took ${(elapsed / 60).toFixed(1)} min`,
    ].join('\n');
    process.stdout.write(`\n${header}\n\n${renderReport(sections)}\n`);
    if (args.json) writeFileSync(args.json, JSON.stringify({ machine, postgresVersion, plan: PLAN, sections, sql: sqlOf }, null, 2));
  } finally {
    for (const server of servers) await server.stop().catch(() => {});
    cluster.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
