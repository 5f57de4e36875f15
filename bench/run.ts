/*
 * `npm run bench [-- --quick] [-- --json FILE] [-- --sql]`: builds the service, starts a
 * throw-away PostgreSQL cluster, seeds data at scale, measures every scenario against the
 * baselines measured in the same run (a bare Fastify route; the service's own SQL replayed
 * through pg), then 2 workers, three replicas behind HAProxy, webhooks, audit streams of
 * every destination type (bench/audit-streams.ts), writes on a pg_auto_failover formation
 * (synchronous standbys) against a single server, and embedded PGlite, then users
 * added through the API and through `wum users import`, measured fresh and settled on both
 * (bench/api-seeded.ts; every other row is seeded set-based, bench/seed.ts, and its section
 * says so), and prints one table. Everything runs on 127.0.0.1; every load is bounded in
 * time. See docs/performance.md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import { freePort } from '../harness/free-port.ts';
import { startPostgresCluster, withClient, type PostgresCluster } from '../harness/postgres-cluster.ts';
import { sendRequest } from '../harness/server-process.ts';
import { buildFrameworkCeiling, CEILING_SCRIPT } from './framework-ceiling-build.ts';
import { openCeilingMeter, type Ceiling, type CeilingSpec } from './db-ceilings.ts';
import { runHttpLoad, type HttpRequestSpec } from './http-load.ts';
import { buildService, postmasterPid, sampleOwnCpu, sampleUsage, SERVER_SCRIPT, startServer, type ServerHandle } from './processes.ts';
import { measureFailover } from './failover.ts';
import { watchMachineLoad } from './machine-load.ts';
import { measureReplicas } from './replicas.ts';
import { measureWebhooks } from './webhooks.ts';
import { measureAuditStreams } from './audit-streams.ts';
import { measureImportSection, measureWritesSection } from './child-sections.ts';
import { IMPORT_GOAL_USERS } from './import-figures.ts';
import { renderReport, ratio, type ReportRow, type ReportSection } from './report.ts';
import { BENCH_ADMIN_TOKEN, measureApiSeeded, pgliteMaintenanceTally, pgliteSettling, postgresSettling } from './api-seeded.ts';
import {
  addRequest,
  lastPage,
  listRequest,
  patchRequest,
  productsRequest,
  removalCursor,
  removeRequest,
  scimFindRequest,
  searchRequest,
  uniqueEmail,
} from './requests.ts';
import type { SqlCeilingFile } from './framework-ceiling.ts';
import { templateToJson } from './sql-replay.ts';
import { seededEmail, seedProducts, seedWorkspaces, vacuumAnalyze, withSeedingClient, type RunSql, type SeededWorkspace } from './seed.ts';
import { buildBundles, SERVER_BUNDLE } from '../scripts/build-bundles.ts';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    sql: { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'info' },
  },
});

/** Sizes and durations: the full run (under 15 minutes on 2 cores) and a quick one for development. */
const PLAN = args.quick
  ? { warmup: 1, seconds: 3, small: 10_000, big: 100_000, tenants: 100, tenantUsers: 1_000, removals: 40_000, mixed: 10_000, apiSeeded: [300, 3_000], churn: 1_000, writeSeconds: 3 }
  : { warmup: 2, seconds: 10, small: 10_000, big: 1_000_000, tenants: 1_000, tenantUsers: 1_000, removals: 200_000, mixed: 10_000, apiSeeded: [1_000, 10_000], churn: 5_000, writeSeconds: 5 };
/** Concurrent connections of every HTTP scenario, and clients of every database ceiling. */
const CONNECTIONS = 10;
/**
 * Node flags of every server the benchmark starts, the service's and the bare Fastify one
 * alike: those of `npm run start:prod` (a heap cap; see docs/operations.md).
 */
const NODE_FLAGS = ['--max-old-space-size=128'];
/** Goal of every endpoint against the bare Fastify route running its SQL (docs/performance.md, "The targets"). */
const SQL_CEILING_GOAL = 0.8;
/** The first page's goal against that route: no slower than the SQL written by hand around it. */
const FIRST_PAGE_SQL_GOAL = 1.0;
const MB = 1024 * 1024;
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
  buildService();
  buildFrameworkCeiling();
}

function serverEnv(databaseUrl: string | undefined, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    RATE_LIMIT_PER_KEY: '0',
    LOG_LEVEL: args['log-level'],
    ...extra,
  };
}

interface Seeded {
  readonly small: SeededWorkspace;
  readonly big: SeededWorkspace;
  readonly adds: SeededWorkspace;
  readonly removals: SeededWorkspace;
  readonly mixed: SeededWorkspace;
  readonly tenants: readonly SeededWorkspace[];
}

async function seedPostgres(url: string): Promise<Seeded> {
  return withSeedingClient(url, async (run) => {
    await seedProducts(run);
    const [small, mixed] = await timed(`seed 2 × ${PLAN.small} users`, () => seedWorkspaces(run, ['small', 'mixed'], PLAN.small));
    const [big] = await timed(`seed 1 × ${PLAN.big} users`, () => seedWorkspaces(run, ['big'], PLAN.big));
    const [removals] = await timed(`seed 1 × ${PLAN.removals} users`, () => seedWorkspaces(run, ['removals'], PLAN.removals));
    const [adds] = await seedWorkspaces(run, ['adds'], 1);
    const names = Array.from({ length: PLAN.tenants }, (_, i) => `t${String(i + 1).padStart(4, '0')}`);
    const tenants = await timed(`seed ${PLAN.tenants} × ${PLAN.tenantUsers} users`, () => seedWorkspaces(run, names, PLAN.tenantUsers));
    await timed('vacuum analyze', () => vacuumAnalyze(run));
    return { small: small!, big: big!, adds: adds!, removals: removals!, mixed: mixed!, tenants };
  });
}

function target(text: string, met: boolean) {
  return { text, met };
}

function within200Mb(row: ReportRow): boolean {
  return (row.server?.maxRssBytes ?? Infinity) <= 200 * MB;
}

async function main(): Promise<void> {
  // Read before the build, which loads the machine itself.
  const load = watchMachineLoad(log);
  build();
  const machine = {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGb: (totalmem() / 1024 ** 3).toFixed(0),
    node: process.version,
    loadAtStart: load.atStart,
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
    await withClient(cluster.url, (client) => client.query('create database wum_bench'));
    const url = cluster.url.replace(/\/postgres$/, '/wum_bench');
    const postgresVersion = await withClient(url, async (client) =>
      (await client.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v,
    );
    const seeded = await timed('seed PostgreSQL', () => seedPostgres(url));
    const database = await postmasterPid(url);
    /** After writes: vacuum now, rather than let autovacuum run into the next scenario's window. */
    const settle = () => withClient(url, (client) => client.query('vacuum (analyze) users, user_apps, user_counts, audit_events'));
    // Seeded users each removal scenario deactivates: the service, its db ceiling, the bare route.
    const third = Math.floor(PLAN.removals / 3);
    // Users of the big workspace each PATCH scenario renames, likewise.
    const patchThird = Math.floor(PLAN.big / 3);
    const bigLast = lastPage(seeded.big.users);

    /** Warm-up, then the measured window, sampling the server's and the database's processes. */
    const measureHttp = async (server: { pid: number; port: number }, next: () => HttpRequestSpec, withDatabase = true) => {
      await runHttpLoad({ port: server.port, connections: CONNECTIONS, seconds: PLAN.warmup, next });
      const serverUsage = sampleUsage(server.pid);
      const databaseUsage = withDatabase ? sampleUsage(database) : undefined;
      const client = sampleOwnCpu();
      const measured = await runHttpLoad({ port: server.port, connections: CONNECTIONS, seconds: PLAN.seconds, next });
      return { measured, server: serverUsage.stop(), client: client.stop(), ...(databaseUsage ? { database: databaseUsage.stop() } : {}) };
    };
    const runServer = async (script: string, env: Record<string, string>, nodeArgs: readonly string[] = NODE_FLAGS) => {
      const server = await startServer(script, env, await freePort(), { nodeArgs });
      servers.push(server);
      return server;
    };
    type Scenario = { readonly scenario: string; readonly next: () => HttpRequestSpec };
    /**
     * A scenario compared to its database ceiling and to the bare Fastify route running the
     * same SQL at `bare.url` (with its own requests when they use seeded users up).
     */
    type CeiledScenario = Scenario & {
      readonly ceiling?: CeilingSpec;
      readonly bare?: { readonly url: string; readonly emailAt?: 'path' | 'body'; readonly next?: () => HttpRequestSpec };
    };
    let sqlCeilings = 0;
    /** The bare Fastify route running `ceiling`'s SQL, under the scenario's load. */
    const measureSqlCeiling = async (scenario: CeiledScenario, ceiling: Ceiling): Promise<ReportRow> => {
      const file = join(scratch, `sql-ceiling-${(sqlCeilings += 1)}.json`);
      const spec: SqlCeilingFile = {
        method: ceiling.response.method,
        url: scenario.bare!.url,
        ...(scenario.bare!.emailAt ? { emailAt: scenario.bare!.emailAt } : {}),
        template: templateToJson(ceiling.template),
        status: ceiling.response.status,
        body: ceiling.response.body,
      };
      writeFileSync(file, JSON.stringify(spec));
      const server = await runServer(CEILING_SCRIPT, serverEnv(url, { CEILING_SQL_FILE: file, DATABASE_POOL_SIZE: '10' }));
      try {
        return { scenario: `sql ceiling: bare Fastify + SQL of ${scenario.scenario}`, ...(await measureHttp(server, scenario.bare!.next ?? scenario.next)) };
      } finally {
        await server.stop();
      }
    };
    const measureAll = async (server: ServerHandle, list: readonly Scenario[]) => {
      const rows = new Map<Scenario, ReportRow>();
      for (const s of list) {
        const row: ReportRow = { scenario: s.scenario, ...(await measureHttp(server, s.next)) };
        rows.set(s, row);
        log(`${s.scenario}: ${row.measured!.perSecond.toFixed(0)}/s, p99 ${row.measured!.p99Ms.toFixed(1)} ms`);
      }
      return rows;
    };

    // The framework ceiling, then each scenario with one worker, each right after the
    // database ceiling it is compared to (so that the machine's drift over the run does not
    // enter the ratio; the idle server costs nothing meanwhile).
    const bare = await runServer(CEILING_SCRIPT, serverEnv(undefined));
    const framework: ReportRow = {
      scenario: 'framework ceiling: bare Fastify, constant JSON',
      ...(await measureHttp(bare, () => ({ method: 'GET', path: '/api/external/v2/products', headers: { host: 'x.localhost' } }), false)),
    };
    await bare.stop();
    log(`framework ceiling: ${framework.measured!.perSecond.toFixed(0)}/s`);
    const removeForCeiling = removalCursor(seeded.removals, third + 1, 2 * third);
    const patchForCeiling = removalCursor(seeded.big, patchThird + 1, 2 * patchThird);
    const emailOfRemoval = (request: HttpRequestSpec) => decodeURIComponent(request.path.slice(request.path.lastIndexOf('/') + 1));
    const ceilingSpecs = {
      smallFirst: { key: 'smallFirst', label: `db ceiling: GET /users page 1 of ${seeded.small.users} SQL`, request: () => listRequest(seeded.small, 1) },
      smallLast: {
        key: 'smallLast',
        label: `db ceiling: GET /users last page of ${seeded.small.users} SQL`,
        request: () => listRequest(seeded.small, lastPage(seeded.small.users)),
      },
      bigFirst: { key: 'bigFirst', label: `db ceiling: GET /users page 1 of ${seeded.big.users} SQL`, request: () => listRequest(seeded.big, 1) },
      bigLast: { key: 'bigLast', label: `db ceiling: GET /users last page of ${seeded.big.users} SQL`, request: () => listRequest(seeded.big, bigLast) },
      add: {
        key: 'add',
        label: 'db ceiling: POST /users SQL',
        request: () => addRequest(seeded.adds),
        email: { of: (r) => (JSON.parse(r.body!) as { user: { email: string } }).user.email, next: () => uniqueEmail(seeded.adds) },
      },
      remove: {
        key: 'remove',
        label: 'db ceiling: DELETE /users/{email} SQL',
        request: () => removeRequest(seeded.removals, removeForCeiling()),
        email: { of: emailOfRemoval, next: removeForCeiling },
      },
      patch: {
        key: 'patch',
        label: 'db ceiling: PATCH /users/{email} SQL',
        request: () => patchRequest(seeded.big, patchForCeiling()),
        email: { of: emailOfRemoval, next: patchForCeiling },
      },
    } satisfies Record<string, CeilingSpec>;
    const meter = await openCeilingMeter({
      databaseUrl: url,
      clients: CONNECTIONS,
      warmupSeconds: PLAN.warmup,
      seconds: PLAN.seconds,
      around: async <T>(work: () => Promise<T>) => {
        const usage = sampleUsage(database);
        const client = sampleOwnCpu();
        const result = await work();
        return { result, extra: { database: usage.stop(), client: client.stop() } };
      },
    });
    const ceilings = new Map<string, Ceiling>();
    const sqlCeilingRows = new Map<string, ReportRow>();

    const removeHttp = removalCursor(seeded.removals, 2, third);
    const removeBare = removalCursor(seeded.removals, 2 * third + 1, PLAN.removals);
    const patchHttp = removalCursor(seeded.big, 2, patchThird);
    const patchBare = removalCursor(seeded.big, 2 * patchThird + 1, PLAN.big);
    const randomBigUser = () => seededEmail(seeded.big.subdomain, 1 + Math.floor(Math.random() * seeded.big.users));
    // Emails u10000@… to u99999@…: each prefix matches itself and ten to a hundred longer ones.
    const selectivePrefix = () => `u${10_000 + Math.floor(Math.random() * 90_000)}`;
    const usersRoute = '/api/external/v2/users';
    const userRoute = '/api/external/v2/users/:email';
    const removeMixed = removalCursor(seeded.mixed, 2, seeded.mixed.users);
    /** `GET /users` of one page, against its ceilings. */
    const listing = (label: string, ws: SeededWorkspace, page: number, ceiling: CeilingSpec): CeiledScenario => ({
      scenario: `GET /users ${label}`,
      next: () => listRequest(ws, page),
      ceiling,
      bare: { url: usersRoute },
    });
    const s = {
      products: { scenario: 'GET /products', next: () => productsRequest(seeded.small) },
      add: {
        scenario: 'POST /users (unique emails)',
        next: () => addRequest(seeded.adds),
        ceiling: ceilingSpecs.add,
        bare: { url: usersRoute, emailAt: 'body' },
      },
      smallFirst: listing(`page 1 of ${seeded.small.users}`, seeded.small, 1, ceilingSpecs.smallFirst),
      smallLast: listing(`last page of ${seeded.small.users}`, seeded.small, lastPage(seeded.small.users), ceilingSpecs.smallLast),
      bigFirst: listing(`page 1 of ${seeded.big.users}`, seeded.big, 1, ceilingSpecs.bigFirst),
      bigLast: listing(`last page of ${seeded.big.users}`, seeded.big, bigLast, ceilingSpecs.bigLast),
      bigMiddle: { scenario: `GET /users middle page of ${seeded.big.users}`, next: () => listRequest(seeded.big, Math.ceil(bigLast / 2)) },
      bigRandom: {
        scenario: `GET /users random page of ${seeded.big.users}`,
        next: () => listRequest(seeded.big, 1 + Math.floor(Math.random() * bigLast)),
      },
      remove: {
        scenario: 'DELETE /users/{email}',
        next: () => removeRequest(seeded.removals, removeHttp()),
        ceiling: ceilingSpecs.remove,
        bare: { url: userRoute, emailAt: 'path', next: () => removeRequest(seeded.removals, removeBare()) },
      },
      patch: {
        scenario: `PATCH /users/{email} (first name, ${seeded.big.users} users)`,
        next: () => patchRequest(seeded.big, patchHttp()),
        ceiling: ceilingSpecs.patch,
        bare: { url: userRoute, emailAt: 'path', next: () => patchRequest(seeded.big, patchBare()) },
      },
      scimFind: {
        scenario: `SCIM GET /Users?filter=userName eq "…" (${seeded.big.users} users)`,
        next: () => scimFindRequest(seeded.big, randomBigUser()),
      },
      search: { scenario: `GET /users?q=<selective prefix> (${seeded.big.users} users)`, next: () => searchRequest(seeded.big, selectivePrefix()) },
      mixed: {
        scenario: 'mixed: 70% list, 20% add, 10% remove',
        next: (): HttpRequestSpec => {
          const dice = Math.random();
          if (dice < 0.7) return listRequest(seeded.mixed, 1);
          if (dice < 0.9) return addRequest(seeded.mixed);
          return removeRequest(seeded.mixed, removeMixed());
        },
      },
      oneTenant: { scenario: `GET /users page 1, always workspace 1 of ${seeded.tenants.length}`, next: () => listRequest(seeded.tenants[0]!, 1) },
      anyTenant: {
        scenario: `GET /users page 1, random workspace of ${seeded.tenants.length}`,
        next: () => listRequest(seeded.tenants[Math.floor(Math.random() * seeded.tenants.length)]!, 1),
      },
    } satisfies Record<string, CeiledScenario>;

    const w1 = await runServer(SERVER_SCRIPT, serverEnv(url));
    // Reads first, then the writes: vacuum runs between, not during, the scenarios.
    const r1 = new Map<Scenario, ReportRow>();
    for (const scenario of [
      s.products, s.smallFirst, s.smallLast, s.bigFirst, s.bigLast, s.bigMiddle, s.bigRandom, s.oneTenant, s.anyTenant,
      s.scimFind, s.search, s.add, s.remove, s.patch, s.mixed,
    ] as readonly CeiledScenario[]) {
      if (scenario.ceiling) {
        const ceiling = await meter.measure(scenario.ceiling);
        ceilings.set(scenario.ceiling.key, ceiling);
        log(`${ceiling.label}: ${ceiling.measured.perSecond.toFixed(0)}/s`);
        if (args.sql) process.stderr.write(`-- ${scenario.ceiling.key}\n${ceiling.sql.join(';\n')};\n\n`);
        // The replay wrote tens of thousands of rows: vacuum now, not during the scenario.
        if (scenario.ceiling.email) await settle();
        if (scenario.bare) {
          const row = await measureSqlCeiling(scenario, ceiling);
          sqlCeilingRows.set(scenario.ceiling.key, row);
          log(`${row.scenario}: ${row.measured!.perSecond.toFixed(0)}/s`);
          if (scenario.ceiling.email) await settle();
        }
      }
      for (const [measuredScenario, row] of await measureAll(w1, [scenario])) r1.set(measuredScenario, row);
    }
    await meter.close();
    await settle();
    const ceilingRow = (key: string): ReportRow => {
      const ceiling = ceilings.get(key)!;
      return { scenario: ceiling.label, measured: ceiling.measured, ...ceiling.extra };
    };
    sections.push({
      title: 'Baselines (same run)',
      rows: [
        framework,
        ...Object.values(ceilingSpecs).flatMap((c) => [ceilingRow(c.key), ...(sqlCeilingRows.has(c.key) ? [sqlCeilingRows.get(c.key)!] : [])]),
      ],
    });
    const base = (key: string) => ({ label: 'db ceiling', perSecond: ceilings.get(key)!.measured.perSecond });
    /** The row with its rate against the bare route running the same SQL. */
    const againstSql = (key: string, row: ReportRow, goal = SQL_CEILING_GOAL): ReportRow => {
      const bareRow = sqlCeilingRows.get(key);
      return bareRow ? { ...row, sqlCeiling: { perSecond: bareRow.measured!.perSecond, goal } } : row;
    };
    const lastOfBig = listRequest(seeded.big, bigLast);
    const reported = ((await sendRequest(w1.port, 'GET', lastOfBig.path, { host: lastOfBig.headers.host!, headers: lastOfBig.headers })).json() as {
      total_count: number;
    }).total_count;
    const counted = await withClient(url, async (client) =>
      Number((await client.query<{ n: string }>("select count(*) as n from users where workspace_id = $1 and status = 'active'", [seeded.big.id])).rows[0]!.n),
    );
    await w1.stop();
    const row1 = (scenario: Scenario) => r1.get(scenario)!;
    const p99Target = (row: ReportRow) => ({ ...row, target: target('p99 ≤ 50 ms', row.measured!.p99Ms <= 50 && row.measured!.errors === 0) });
    const withRatio = (row: ReportRow, baseline: ReportRow['baseline'], text: string, minimum: number): ReportRow => {
      const withBase = { ...row, baseline };
      return { ...withBase, target: target(text, (ratio(withBase) ?? 0) >= minimum && row.measured!.errors === 0) };
    };
    sections.push({
      title: 'PostgreSQL, WORKERS=1',
      rows: [
        withRatio(row1(s.products), { label: 'framework', perSecond: framework.measured!.perSecond }, '≥ 0.6×', 0.6),
        againstSql('add', withRatio(row1(s.add), base('add'), '≥ 0.7×', 0.7)),
        againstSql('smallFirst', withRatio(row1(s.smallFirst), base('smallFirst'), '≥ 0.7×', 0.7), FIRST_PAGE_SQL_GOAL),
        againstSql('smallLast', { ...row1(s.smallLast), baseline: base('smallLast') }),
        againstSql('bigFirst', p99Target({ ...row1(s.bigFirst), baseline: base('bigFirst') }), FIRST_PAGE_SQL_GOAL),
        againstSql('bigLast', p99Target({ ...row1(s.bigLast), baseline: base('bigLast') })),
        p99Target(row1(s.bigMiddle)),
        p99Target(row1(s.bigRandom)),
        againstSql('remove', { ...row1(s.remove), baseline: base('remove') }),
        againstSql('patch', withRatio(row1(s.patch), base('patch'), '≥ 0.8×', 0.8)),
        { ...row1(s.scimFind), target: target('p99 ≤ 10 ms', row1(s.scimFind).measured!.p99Ms <= 10 && row1(s.scimFind).measured!.errors === 0) },
        { ...row1(s.search), target: target('p99 ≤ 50 ms', row1(s.search).measured!.p99Ms <= 50 && row1(s.search).measured!.errors === 0) },
        { ...row1(s.mixed), target: target('RSS ≤ 200 MB', within200Mb(row1(s.mixed))) },
        row1(s.oneTenant),
        { ...row1(s.anyTenant), baseline: { label: 'one workspace', perSecond: row1(s.oneTenant).measured!.perSecond } },
        { scenario: `total_count at ${seeded.big.users} users`, note: reported === counted ? `exact (${reported})` : `WRONG: ${reported}, count(*) ${counted}` },
      ],
    });

    // The read cache off: every request looks its key up, every GET /products reads the catalogue.
    const uncached = await runServer(SERVER_SCRIPT, serverEnv(url, { CACHE_TTL_MS: '0' }));
    const noCache = [
      { scenario: 'GET /products, CACHE_TTL_MS=0', next: s.products.next },
      { scenario: `GET /users page 1 of ${seeded.small.users}, CACHE_TTL_MS=0`, next: s.smallFirst.next },
    ];
    const rNoCache = await measureAll(uncached, noCache);
    await uncached.stop();
    sections.push({
      title: 'PostgreSQL, WORKERS=1, read cache off',
      rows: noCache.map((n, i) => ({
        ...rNoCache.get(n)!,
        baseline: { label: 'with cache', perSecond: row1([s.products, s.smallFirst][i]!).measured!.perSecond },
      })),
    });

    // PostgreSQL, 2 workers.
    const w2 = await runServer(SERVER_SCRIPT, serverEnv(url, { WORKERS: '2' }));
    const twoWorkers = [s.products, s.smallFirst, s.add, s.mixed];
    const r2 = await measureAll(w2, twoWorkers);
    await w2.stop();
    await settle();
    sections.push({
      title: 'PostgreSQL, WORKERS=2',
      rows: twoWorkers.map((scenario) => {
        const row = { ...r2.get(scenario)!, baseline: { label: 'WORKERS=1', perSecond: row1(scenario).measured!.perSecond } };
        return scenario === s.mixed ? { ...row, target: target('RSS ≤ 200 MB per worker', within200Mb(row)) } : row;
      }),
    });

    // Sections that start their own servers on this PostgreSQL.
    const onPostgres = {
      env: serverEnv(url),
      start: (env: Record<string, string>) => runServer(SERVER_SCRIPT, env),
      databasePid: database,
      connections: CONNECTIONS,
      warmupSeconds: PLAN.warmup,
      seconds: PLAN.seconds,
      log,
    };
    // Three replicas behind HAProxy against one (bench/replicas.ts).
    sections.push(await measureReplicas({ ...onPostgres, scenarios: [s.smallFirst, s.add] }));
    await settle();
    // POST /users with webhook endpoints against none; event-to-delivery latency (bench/webhooks.ts).
    sections.push(await measureWebhooks({ ...onPostgres, subdomain: seeded.adds.subdomain, add: () => addRequest(seeded.adds) }));
    await settle();
    /** A section that failed: logged, and one row saying why, so that the run goes on to the others. */
    const notMeasured = (title: string) => (error: Error): ReportSection => {
      log(`${title} not measured: ${error.message}`);
      return { title, rows: [{ scenario: 'not measured', note: error.message.split('\n')[0]! }] };
    };
    // One audit stream of each type: POST /users against none; lag at 1,000 changes/s (bench/audit-streams.ts).
    // The small workspace is read no more after this point: its users are the ones renamed.
    const streams = { ...onPostgres, databaseUrl: url, workspace: seeded.small, rate: 1_000, pacedSeconds: args.quick ? 10 : 60, format: 'json' as const, importWindow: true };
    sections.push(
      await measureAuditStreams(streams).catch(notMeasured('Audit streams')),
    );
    await settle();
    // Writes on the pg_auto_failover topology against a single server (bench/failover.ts).
    sections.push(await measureFailover({ ...onPostgres, env: serverEnv(undefined) }));

    // Embedded PGlite: start-up empty, then with a 1M-user workspace loaded by the same seed.
    const dataDir = join(scratch, 'pglite');
    const empty = await runServer(SERVER_SCRIPT, serverEnv(undefined, { DATA_DIR: dataDir }));
    await empty.stop();
    // The same first start as `npm start` runs it: the bundle (scripts/build-bundles.ts).
    await buildBundles({ ifStale: true });
    const emptyBundle = await runServer(SERVER_BUNDLE, serverEnv(undefined, { DATA_DIR: join(scratch, 'pglite-bundle') }));
    await emptyBundle.stop();
    const pglite = await timed(`seed PGlite 1 × ${PLAN.big} users`, async () => {
      const db = await PGlite.create(dataDir);
      try {
        const run: RunSql = async (text, params) => (await db.query<Record<string, unknown>>(text, params)).rows;
        const [big] = await seedWorkspaces(run, ['big'], PLAN.big);
        const [adds] = await seedWorkspaces(run, ['adds'], 1);
        await vacuumAnalyze(run);
        return { big: big!, adds: adds! };
      } finally {
        await db.close();
      }
    });
    const loaded = await runServer(SERVER_SCRIPT, serverEnv(undefined, { DATA_DIR: dataDir }));
    const pgliteScenarios = [
      { scenario: 'PGlite GET /products', next: () => productsRequest(pglite.big), postgres: s.products },
      { scenario: `PGlite GET /users page 1 of ${PLAN.big}`, next: () => listRequest(pglite.big, 1), postgres: s.bigFirst },
      { scenario: `PGlite GET /users last page of ${PLAN.big}`, next: () => listRequest(pglite.big, bigLast), postgres: s.bigLast },
      { scenario: 'PGlite POST /users (unique emails)', next: () => addRequest(pglite.adds), postgres: s.add },
    ];
    const rPglite = await measureAll(loaded, pgliteScenarios);
    await loaded.stop();
    sections.push({
      title: 'Embedded PGlite (DATA_DIR), WORKERS=1',
      rows: [
        { scenario: 'start-up, empty data dir (create, migrate, demo seed)', note: `${empty.startupMs.toFixed(0)} ms` },
        { scenario: 'the same as npm start runs it (bundle)', note: `${emptyBundle.startupMs.toFixed(0)} ms` },
        { scenario: `start-up, data dir with ${PLAN.big} users`, note: `${loaded.startupMs.toFixed(0)} ms` },
        ...pgliteScenarios.map((p) => ({
          ...rPglite.get(p)!,
          baseline: { label: 'PostgreSQL', perSecond: row1(p.postgres).measured!.perSecond },
        })),
      ],
    });

    // Users added through the API and by `wum users import`, measured fresh and settled, on both backends (bench/api-seeded.ts).
    const apiSeeded = { sizes: PLAN.apiSeeded, connections: CONNECTIONS, warmupSeconds: PLAN.warmup, seconds: PLAN.seconds, log };
    // A database of their own: in wum_bench, whose users table holds the set-based seeds, the
    // few thousand users added here never pass autovacuum's analyze threshold (10 % of its rows),
    // so "settled" would never come on PostgreSQL.
    await withClient(cluster.url, (client) => client.query('create database wum_api_seeded'));
    const apiUrl = cluster.url.replace(/\/postgres$/, '/wum_api_seeded');
    const pgQuery = (text: string) => withClient(apiUrl, async (client) => (await client.query(text)).rows as Array<Record<string, unknown>>);
    const apiEnv = { ADMIN_TOKEN: BENCH_ADMIN_TOKEN, SEED_DEMO: 'false' };
    // Every section so far was seeded set-based; each says so (issue: each row says its seed).
    sections.splice(0, sections.length, ...sections.map((section) => ({ ...section, title: `${section.title} [set-based seed, then VACUUM ANALYZE]` })));
    sections.push(
      await measureApiSeeded({ ...apiSeeded, backend: 'PostgreSQL', start: () => runServer(SERVER_SCRIPT, serverEnv(apiUrl, apiEnv)), settling: postgresSettling(pgQuery) }),
    );
    const apiDataDir = join(scratch, 'pglite-api');
    sections.push(
      await measureApiSeeded({
        ...apiSeeded,
        backend: 'PGlite',
        start: () => runServer(SERVER_SCRIPT, serverEnv(undefined, { ...apiEnv, DATA_DIR: apiDataDir })),
        settling: pgliteSettling,
        maintenance: pgliteMaintenanceTally,
        growth: { dataDir: apiDataDir, changesPerBlock: PLAN.churn, blocks: 3 },
      }),
    );

    // The writes against the plain SQL and the import job of 100,000 users: benchmark commands of
    // their own, run as children (bench/child-sections.ts), each with the goals of its issue.
    sections.push(
      await Promise.resolve()
        .then(() => measureWritesSection({ seconds: PLAN.writeSeconds, rounds: 2, users: 40_000, load, log }))
        .catch(notMeasured('Writes against the plain SQL')),
    );
    sections.push(
      await Promise.resolve()
        .then(() => measureImportSection({ users: IMPORT_GOAL_USERS, load, log }))
        .catch(notMeasured('Import job')),
    );

    const header = [
      `wum benchmark${args.quick ? ' (--quick: smaller data, 3 s scenarios; not for the record)' : ''}`,
      `machine: ${machine.cores} cores (${machine.cpu}), ${machine.memoryGb} GB; Node ${machine.node}; PostgreSQL ${postgresVersion}`,
      `each scenario: ${CONNECTIONS} connections (db ceilings: ${CONNECTIONS} clients), ${PLAN.warmup} s warm-up, ${PLAN.seconds} s measured; node ${NODE_FLAGS.join(' ')}; LOG_LEVEL=${args['log-level']}; RATE_LIMIT_PER_KEY=0; DATABASE_POOL_SIZE=10 per worker`,
      `run took ${((performance.now() - started) / 60_000).toFixed(1)} min`,
    ].join('\n');
    process.stdout.write(`\n${header}\n\n${renderReport(sections, load)}\n`);
    if (args.json) {
      const sql = Object.fromEntries([...ceilings].map(([key, c]) => [key, c.sql]));
      writeFileSync(args.json, JSON.stringify({ machine, postgresVersion, plan: PLAN, sections, sql }, null, 2));
    }
  } finally {
    for (const server of servers) await server.stop().catch(() => {});
    cluster.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
