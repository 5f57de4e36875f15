/*
 * `npm run bench:expiry [-- --users 100000] [-- --backend pglite|postgres] [-- --seconds 10]
 * [-- --lead-seconds S] [-- --skip-build]`: access that ends on time, at scale
 * (docs/contract.md Part B, "Access that ends on time"; docs/performance.md, "Access that ends on time, at scale").
 *
 * One workspace of N users, all with the same `expires_at` a little in the future, added as a
 * user adds expiring users: `POST /users` with `expires_at` (what `wum users add --expires-at`
 * sends), 10 in flight. `wum users import` reads no `expires_at` column, and an import followed
 * by a `PATCH` of each user is twice the requests for the same end state. Then, against the
 * real server process (compiled, as `npm run bench` starts it):
 * - `GET /users` page 1 measured idle, just before the due instant (the baseline);
 * - from the due instant, the same load until every user is deactivated (the active count,
 *   polled through `GET /users?status=active`), its p99 over the baseline (goal ≤ 2×);
 * - the `user.deactivated` events and audit rows of the workspace (each must equal N);
 * - the EXPLAIN of the scheduler's own "what is due" claim (the SQL is taken from
 *   src/storage/lifecycle.queries.ts, not copied), which should read the partial index
 *   `users__due_expiry` as a range. On PostgreSQL before the due instant; on PGlite once the
 *   server has stopped (it owns the data directory while it runs), so over the swept table.
 * The due instant is planned from a calibration (200 adds into another workspace): the seed
 * must end before the idle window starts, else the run stops and says to pass --lead-seconds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { freePort } from '../harness/free-port.ts';
import { startPostgresCluster, withClient } from '../harness/postgres-cluster.ts';
import { sendRequest } from '../harness/server-process.ts';
import type { Database } from '../src/storage/database.ts';
import { createLifecycleRepository } from '../src/storage/lifecycle.queries.ts';
import { BENCH_ADMIN_TOKEN, createWorkspace, sendAll } from './api-seeded.ts';
import { runHttpLoad } from './http-load.ts';
import type { Measurement } from './measurement.ts';
import { watchMachineLoad } from './machine-load.ts';
import { buildService, SERVER_SCRIPT, startServer, type ServerHandle } from './processes.ts';
import { addRequest, API, headersOf, listRequest } from './requests.ts';
import type { SeededWorkspace } from './seed.ts';

const { values: args } = parseArgs({
  options: {
    users: { type: 'string', default: '100000' },
    backend: { type: 'string' },
    seconds: { type: 'string', default: '10' },
    'lead-seconds': { type: 'string' },
    'skip-build': { type: 'boolean', default: false },
  },
});
const USERS = Number(args.users);
const SECONDS = Number(args.seconds);
const WARMUP_SECONDS = 1;
const CONNECTIONS = 10;
/** Adds timed before the seed, to plan the due instant. */
const CALIBRATION_ADDS = 200;
/** The seed may take this many times the calibrated estimate. */
const SEED_SLACK = 2;
/** The sweep is given up when no user was deactivated for this long. */
const STALL_MS = 60_000;
/** How often the active count is read during the sweep. */
const POLL_MS = 200;
/** The goal: `GET /users` p99 during the sweep ≤ this × idle. */
const GOAL_RATIO = 2;
if (!Number.isInteger(USERS) || USERS < 1) throw new Error(`--users takes a positive integer, not ${args.users}`);
if (args.backend && !['pglite', 'postgres'].includes(args.backend)) throw new Error(`--backend takes pglite or postgres, not ${args.backend}`);

const started = performance.now();
const log = (message: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
const load = watchMachineLoad(log);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** `POST /users` of a new non-owner whose membership ends at `due`. */
function expiringAdd(ws: SeededWorkspace, due: Date) {
  const spec = addRequest(ws);
  const body = JSON.parse(spec.body!) as { user: Record<string, unknown> };
  return { ...spec, body: JSON.stringify({ user: { ...body.user, expires_at: due.toISOString() } }) };
}

/**
 * How many active users `ws` has (`total_records` of `GET /users?status=active`); undefined
 * when the server sheds the request (503 while overloaded: the sweep's load is what is measured).
 */
async function activeCount(port: number, ws: SeededWorkspace): Promise<number | undefined> {
  const res = await sendRequest(port, 'GET', `${API}/users?status=active&page_size=1`, { host: `${ws.subdomain}.localhost`, headers: headersOf(ws) });
  if (res.status === 503) return undefined;
  if (res.status !== 200) throw new Error(`GET /users?status=active: ${res.status} ${res.body}`);
  return (res.json() as { pagination: { total_records: number } }).pagination.total_records;
}

/** The scheduler's claim of expired users at `at`, as SQL text and parameters (the repository's own query). */
function dueQuery(at: Date): { sql: string; params: unknown[] } {
  let captured: SQL | undefined;
  const capture = { execute: (query: SQL) => ((captured = query), Promise.resolve([])) } as unknown as Database;
  void createLifecycleRepository(capture).claimExpired(at, 100);
  return new PgDialect().sqlToQuery(captured!);
}

/** Runs SQL on the backend's database: a pg client (PostgreSQL) or PGlite on the stopped server's data directory. */
type Query = (text: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** The plan of the due claim, its lines, and whether it reads `users__due_expiry`. */
async function explainDue(query: Query, at: Date): Promise<{ lines: string[]; rangeScan: boolean }> {
  const { sql, params } = dueQuery(at);
  const rows = await query(`explain ${sql}`, params);
  const lines = rows.map((row) => String(row['QUERY PLAN']));
  return { lines, rangeScan: lines.some((line) => /Index (Only )?Scan using users__due_expiry/.test(line)) };
}

/** `user.deactivated` events and audit rows of the workspace `subdomain`. */
async function countChanges(query: Query, subdomain: string): Promise<{ events: number; audit: number }> {
  const [row] = await query(
    `select (select count(*) from events e where e.workspace_id = w.id and e.type = 'user.deactivated')::int as events,
            (select count(*) from audit_events a where a.workspace_id = w.id and a.action = 'user.deactivated')::int as audit
     from workspaces w where w.subdomain = $1`,
    [subdomain],
  );
  return { events: Number(row?.events ?? 0), audit: Number(row?.audit ?? 0) };
}

/** What one backend's run found. */
interface ExpiryResult {
  readonly backend: string;
  readonly seedPerSecond: number;
  readonly idle: Measurement;
  readonly sweep: Measurement;
  /** From the due instant to the first / the last deactivation seen, in seconds. */
  readonly firstSeconds: number;
  readonly allSeconds: number;
  readonly remaining: number;
  readonly events: number;
  readonly audit: number;
  readonly plan: { lines: string[]; rangeScan: boolean };
}

/**
 * Seeds, measures idle, waits for the due instant and measures the sweep against `server`.
 * `before` runs once the seed is done (PostgreSQL: the EXPLAIN); `after` once the sweep is
 * (it may stop the server).
 */
async function measureExpiry(
  backend: string,
  server: ServerHandle,
  after: (ws: SeededWorkspace, due: Date) => Promise<{ events: number; audit: number; plan?: ExpiryResult['plan'] }>,
  before: (due: Date) => Promise<ExpiryResult['plan'] | undefined>,
): Promise<ExpiryResult> {
  const calibration = await createWorkspace(server.port, 'calibration');
  const rate = await sendAll(server.port, CALIBRATION_ADDS, () => addRequest(calibration));
  const windowMs = (WARMUP_SECONDS + SECONDS) * 1000;
  const leadMs = args['lead-seconds'] ? Number(args['lead-seconds']) * 1000 : (USERS / rate) * 1000 * SEED_SLACK + windowMs + 10_000;
  const ws = await createWorkspace(server.port, 'expiring');
  const due = new Date(Date.now() + leadMs);
  log(`${backend}: calibration ${rate.toFixed(0)} adds/s; ${USERS} users expire at ${due.toISOString()} (in ${(leadMs / 1000).toFixed(0)} s)`);
  const seedPerSecond = await sendAll(server.port, USERS, () => expiringAdd(ws, due), (sent, perSecond) => log(`${backend}: ${sent} of ${USERS} added (${perSecond.toFixed(0)}/s)`));
  log(`${backend}: seeded at ${seedPerSecond.toFixed(0)}/s`);
  const idleStart = due.getTime() - windowMs - 2_000;
  const earlyPlan = await before(due);
  if (Date.now() > idleStart) throw new Error(`${backend}: the seed ended ${((Date.now() - idleStart) / 1000).toFixed(0)} s too late for the idle window; pass a larger --lead-seconds`);
  let activeBefore: number | undefined;
  while ((activeBefore = await activeCount(server.port, ws)) === undefined) await sleep(POLL_MS);
  await sleep(idleStart - Date.now());
  const list = () => listRequest(ws, 1);
  await runHttpLoad({ port: server.port, connections: CONNECTIONS, seconds: WARMUP_SECONDS, next: list });
  const idle = await runHttpLoad({ port: server.port, connections: CONNECTIONS, seconds: SECONDS, next: list });
  log(`${backend}: idle GET /users p99 ${idle.p99Ms.toFixed(1)} ms (${idle.perSecond.toFixed(0)}/s)`);
  await sleep(due.getTime() - Date.now());

  // From the due instant: the same load until the active count has fallen by N (or stalls).
  const target = activeBefore - USERS;
  let firstSeconds = Number.NaN;
  let remaining = USERS;
  const done = (async () => {
    let last = activeBefore;
    let progressAt = Date.now();
    let reportedAt = Date.now();
    for (;;) {
      const active = (await activeCount(server.port, ws)) ?? last;
      const since = (Date.now() - due.getTime()) / 1000;
      if (active < activeBefore && Number.isNaN(firstSeconds)) firstSeconds = since;
      if (active !== last) [last, progressAt] = [active, Date.now()];
      remaining = active - target;
      if (remaining <= 0) return since;
      // A long sweep says how far it is, so a slow one is seen before it ends.
      if (Date.now() - reportedAt >= 10_000) {
        reportedAt = Date.now();
        log(`${backend}: ${USERS - remaining} of ${USERS} deactivated after ${since.toFixed(0)} s`);
      }
      if (Date.now() - progressAt > STALL_MS) return since;
      await sleep(POLL_MS);
    }
  })();
  const sweep = await runHttpLoad({ port: server.port, connections: CONNECTIONS, seconds: 3600, next: list, until: done.catch(() => {}) });
  const allSeconds = await done;
  log(`${backend}: ${USERS - remaining} of ${USERS} deactivated ${allSeconds.toFixed(1)} s after the due instant; GET /users p99 during the sweep ${sweep.p99Ms.toFixed(1)} ms`);
  const counts = await after(ws, due);
  const plan = earlyPlan ?? counts.plan!;
  return { backend, seedPerSecond, idle, sweep, firstSeconds, allSeconds, remaining, events: counts.events, audit: counts.audit, plan };
}

/** The lines printed for one backend. */
function describe(result: ExpiryResult): string {
  const ratio = result.sweep.p99Ms / result.idle.p99Ms;
  const met = ratio <= GOAL_RATIO && result.remaining <= 0 && result.sweep.errors === 0 && result.idle.errors === 0;
  const errors = (m: Measurement) => (m.errors > 0 ? `, ${m.errors} errors (${m.errorDetail})` : '');
  return [
    `${result.backend}: ${USERS} users of one workspace expiring at one instant (seeded by POST /users at ${result.seedPerSecond.toFixed(0)}/s)`,
    `  idle GET /users page 1: p99 ${result.idle.p99Ms.toFixed(1)} ms, p50 ${result.idle.p50Ms.toFixed(1)} ms, ${result.idle.perSecond.toFixed(0)}/s${errors(result.idle)}`,
    `  during the sweep:       p99 ${result.sweep.p99Ms.toFixed(1)} ms, p50 ${result.sweep.p50Ms.toFixed(1)} ms, ${result.sweep.perSecond.toFixed(0)}/s over ${result.sweep.seconds.toFixed(1)} s${errors(result.sweep)}`,
    `  sweep p99 ÷ idle p99 = ${load.ratio(ratio)} (goal ≤ ${GOAL_RATIO}×): ${load.verdict(met)}`,
    `  first deactivation ${result.firstSeconds.toFixed(1)} s after the due instant; ${result.remaining <= 0 ? `all ${USERS}` : `${USERS - result.remaining} of ${USERS} (stalled)`} after ${result.allSeconds.toFixed(1)} s (${((USERS - result.remaining) / result.allSeconds).toFixed(0)} users/s)`,
    `  user.deactivated events ${result.events}, audit rows ${result.audit} (expected ${USERS} each): ${result.events === USERS && result.audit === USERS ? 'equal' : 'NOT equal'}`,
    `  EXPLAIN of the due claim (${result.plan.rangeScan ? 'range scan of users__due_expiry' : 'NO range scan of users__due_expiry'}):`,
    ...result.plan.lines.map((line) => `    ${line}`),
  ].join('\n');
}

if (!args['skip-build']) buildService();
const env = (extra: Record<string, string>) => ({ RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'warn', ADMIN_TOKEN: BENCH_ADMIN_TOKEN, SEED_DEMO: 'false', ...extra });
const start = async (extra: Record<string, string>) => startServer(SERVER_SCRIPT, env(extra), await freePort(), { nodeArgs: ['--max-old-space-size=128'] });
const scratch = mkdtempSync(join(tmpdir(), 'wum-bench-expiry-'));
const results: ExpiryResult[] = [];
const cluster = args.backend === 'pglite' ? undefined : await startPostgresCluster();
if (args.backend === 'postgres' && !cluster) throw new Error('--backend postgres needs initdb and pg_ctl on PATH');
let server: ServerHandle | undefined;
try {
  if (cluster) {
    await withClient(cluster.url, (client) => client.query('create database wum_expiry'));
    const url = cluster.url.replace(/\/postgres$/, '/wum_expiry');
    const query: Query = (text, params) => withClient(url, async (client) => (await client.query(text, params)).rows as Array<Record<string, unknown>>);
    server = await start({ DATABASE_URL: url });
    // Planned as the scheduler's claim will be, on statistics that know the seed.
    const before = async (due: Date) => {
      await query('analyze users');
      return explainDue(query, due);
    };
    results.push(await measureExpiry('PostgreSQL', server, (ws) => countChanges(query, ws.subdomain), before));
    await server.stop();
    server = undefined;
  }
  if (args.backend !== 'postgres') {
    const dataDir = join(scratch, 'pglite');
    server = await start({ DATA_DIR: dataDir });
    const handle = server;
    const after = async (ws: SeededWorkspace, due: Date) => {
      await handle.stop();
      server = undefined;
      const { PGlite } = await import('@electric-sql/pglite');
      const db = await PGlite.create(dataDir);
      try {
        const query: Query = async (text, params) => (await db.query<Record<string, unknown>>(text, params)).rows;
        return { ...(await countChanges(query, ws.subdomain)), plan: await explainDue(query, due) };
      } finally {
        await db.close();
      }
    };
    results.push(await measureExpiry('PGlite', server, after, () => Promise.resolve(undefined)));
  }
  process.stdout.write(
    `\nexpiry at scale: ${cpus().length} cores; ${load.summary()}; ` +
      `${CONNECTIONS} connections, ${SECONDS} s idle window; run took ${((performance.now() - started) / 60_000).toFixed(1)} min\n\n` +
      `${results.map(describe).join('\n\n')}\n`,
  );
} finally {
  await server?.stop().catch(() => {});
  cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
}
