/*
 * `npm run bench:plans-fresh [-- --users 3000 --runs 100 --backend pglite|postgres|both --plans
 * --analyzed-at 0.01]`:
 * the reads whose speed could hang on statistics, in process, on a new database whose users
 * were added one by one through the service (as `POST /users` adds them), then copied: the
 * original is never analyzed ("fresh"; on PostgreSQL autovacuum is off for its tables so that
 * it cannot analyze them meanwhile), the copy is analyzed once ("analyzed"), and each read is
 * timed on both by turns (so that a shared machine's load falls on both alike), on embedded
 * PGlite (a data directory on disk, as the server keeps it) and on a throw-away PostgreSQL
 * (the copy by `CREATE DATABASE … TEMPLATE`). With `--plans`, each statement's `EXPLAIN
 * (ANALYZE, BUFFERS)` fresh and analyzed, and the rows it read of each table
 * (`pg_stat_xact_user_tables`, which also sees the statements inside `user_page_ids`). The
 * goal: fresh at least 0.8× as fast as analyzed (docs/performance.md, "Fast on data as it
 * arrives"). With `--analyzed-at F` (0 < F < 1) the other case of that goal: the seed runs
 * `ANALYZE` once it has added F of the users, then adds the rest, so that the measured
 * database holds statistics taken at F of its rows ("stale") instead of none. Nothing else
 * analyzes it: autovacuum is off for its tables on PostgreSQL, and the embedded store's
 * maintenance runs only in the server, never in this process.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { SYSTEM_ACTOR } from '../src/core/actor.ts';
import { DEMO_PRODUCTS } from '../src/core/demo.ts';
import { listEvents } from '../src/core/events/events-service.ts';
import { putProduct } from '../src/core/products/products-service.ts';
import { searchCondition } from '../src/core/users/user-query.ts';
import { addUser, deactivateUser, listUsers } from '../src/core/users/users-service.ts';
import { createWorkspace } from '../src/core/workspaces/workspaces-service.ts';
import { openDatabase, type OpenDatabase } from '../src/storage/database.ts';
import { createStore } from '../src/storage/store.ts';
import { createKeyRing, generateSecretsKey } from '../src/core/secrets/secret-box.ts';
import type { Store } from '../src/core/ports.ts';
import { startPostgresCluster, withClient } from '../harness/postgres-cluster.ts';
import { captureStatements, explainAnalyze, explainGeneric, planningMs } from '../harness/statements.ts';
import { watchMachineLoad } from './machine-load.ts';
import { LatencyRecorder } from './measurement.ts';

const load = watchMachineLoad();

const { values: options } = parseArgs({
  options: {
    users: { type: 'string', default: '3000' },
    runs: { type: 'string', default: '100' },
    backend: { type: 'string', default: 'both' },
    plans: { type: 'boolean', default: false },
    'analyzed-at': { type: 'string' },
  },
});
const USERS = Number(options.users);
const RUNS = Number(options.runs);
const WARM_UP = 5;
/** With `--analyzed-at`: the share of the users added when the seed runs `ANALYZE`. */
const ANALYZED_AT = options['analyzed-at'] === undefined ? undefined : Number(options['analyzed-at']);
if (ANALYZED_AT !== undefined && !(ANALYZED_AT > 0 && ANALYZED_AT < 1)) throw new Error(`--analyzed-at takes a share between 0 and 1, not ${options['analyzed-at']}`);
/** What the measured database's statistics are: none, or taken at `ANALYZED_AT` of the rows. */
const MEASURED = ANALYZED_AT === undefined ? 'fresh' : `analyzed at ${(ANALYZED_AT * 100).toFixed(0)} %`;
/** Tables that grow with a workspace (kept from autovacuum on PostgreSQL while measured fresh). */
const GROWING = ['users', 'user_apps', 'user_counts', 'events', 'webhook_deliveries', 'audit_events'];

/** One read as a request makes it, through the service. */
interface Read {
  readonly label: string;
  readonly run: () => Promise<unknown>;
}

/**
 * Adds `USERS` users one by one through the service (two apps for two in three, a user of
 * another workspace every tenth), then deactivates every seventh; returns the workspace's id.
 * `analyze` runs once `ANALYZED_AT` of the users were added (with `--analyzed-at`).
 */
async function seed(store: Store, analyze: () => Promise<void>): Promise<number> {
  for (const product of DEMO_PRODUCTS) await putProduct(store, product.name, product.roles, SYSTEM_ACTOR);
  const id = (await createWorkspace(store, 'plans', undefined, SYSTEM_ACTOR)).workspace.id;
  const other = (await createWorkspace(store, 'plans-other', undefined, SYSTEM_ACTOR)).workspace.id;
  const started = performance.now();
  const analyzeAt = ANALYZED_AT === undefined ? -1 : Math.round(USERS * ANALYZED_AT);
  for (let i = 0; i < USERS; i += 1) {
    if (i === analyzeAt) {
      await analyze();
      process.stdout.write(`analyzed after ${i} of ${USERS} users\n`);
    }
    const apps = i % 3 === 0 ? [] : [{ name: 'crm', role: 'member' }, { name: 'analytics', role: 'viewer' }];
    await addUser(store, id, { email: `u${i}@example.com`, role: 'non_owner', apps, firstName: `First${i}`, lastName: `Last${i}` }, SYSTEM_ACTOR);
    if (i % 10 === 0) await addUser(store, other, { email: `o${i}@example.com`, role: 'non_owner', apps: [] }, SYSTEM_ACTOR);
  }
  for (let i = 0; i < USERS; i += 7) await deactivateUser(store, id, { email: `u${i}@example.com` }, SYSTEM_ACTOR);
  process.stdout.write(`added ${USERS} users through the service in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return id;
}

/** The reads measured: the two pages already independent of statistics, for reference, and the three that were not. */
function reads(store: Store, workspaceId: number): Read[] {
  const page = (status: 'active' | 'all', pageNumber: number) => () =>
    listUsers(store, workspaceId, { status }, { pageNumber, pageSize: 100 });
  const search = (q: string) => () => listUsers(store, workspaceId, { status: 'active', where: searchCondition({ q })! }, { pageNumber: 1, pageSize: 100 });
  const events = Math.round(USERS * 1.1);
  // Users First<i> with i starting with `prefix`, less every seventh (deactivated by `seed`).
  const matching = (prefix: string) => Array.from({ length: USERS }, (_, i) => i).filter((i) => String(i).startsWith(prefix) && i % 7 !== 0).length;
  return [
    { label: 'page 1 (reference)', run: page('active', 1) },
    { label: 'page 5 of 100, status=active (reference)', run: page('active', 5) },
    { label: 'page 5 of 100, status=all', run: page('all', 5) },
    { label: `q=first123 (${matching('123')} active users)`, run: search('first123') },
    { label: `q=first12 (${matching('12')} active users)`, run: search('first12') },
    { label: `GET /events after ${Math.round(events / 2)}, limit 50`, run: () => listEvents(store, workspaceId, Math.round(events / 2), 50) },
  ];
}

/** p50 (ms) of each read over `RUNS` rounds, every read on both databases by turns, so that load falls on all alike. */
async function timeByTurns(all: ReadonlyArray<readonly [Read, Read]>): Promise<Array<[number, number]>> {
  const runs = all.flatMap(([fresh, analyzed]) => [fresh.run, analyzed.run]);
  for (let i = 0; i < WARM_UP; i += 1) for (const run of runs) await run();
  const latencies = runs.map(() => new LatencyRecorder(RUNS));
  for (let round = 0; round < RUNS; round += 1) {
    for (let turn = 0; turn < runs.length; turn += 1) {
      const which = (turn + round) % runs.length;
      const started = performance.now();
      await runs[which]!();
      latencies[which]!.record(performance.now() - started);
    }
  }
  return all.map((_, i) => [latencies[2 * i]!.quantile(0.5), latencies[2 * i + 1]!.quantile(0.5)]);
}

/** Prints each statement of each read with its `EXPLAIN (ANALYZE, BUFFERS)` and the rows it read. */
async function printPlans(database: OpenDatabase, all: readonly Read[], when: string): Promise<void> {
  for (const read of all) {
    const statements = await captureStatements(database.db, read.run);
    for (const statement of statements) {
      const { plan, read: counted } = await explainAnalyze(database.db, statement);
      const rows = [...counted].map(([table, c]) => `${table} ${c.rows}`).join(', ');
      const planning = await planningMs(database.db, statement, 21);
      process.stdout.write(`\n--- ${when}: ${read.label}; rows read: ${rows || 'none'}; planning p50 of 21: ${planning.toFixed(3)} ms\n${plan}\n`);
      if (statement.params.length > 0) process.stdout.write(`\n--- ${when}: ${read.label}, generic plan\n${await explainGeneric(database.db, statement)}\n`);
    }
  }
}

/** Where a backend's databases come from: a new one to seed, and a copy of it once seeded. */
interface Backend {
  readonly name: string;
  /** Opens the database to seed (new, migrated). */
  readonly open: () => Promise<OpenDatabase>;
  /** Once the seeded database is closed: opens it again, and a copy of it. */
  readonly reopenWithCopy: () => Promise<[OpenDatabase, OpenDatabase]>;
}

/** Seeds a new database of `backend`, copies it, analyzes the copy, then explains (with `--plans`) and times each read on both. */
async function measure(backend: Backend): Promise<void> {
  process.stdout.write(`\n## ${backend.name}: ${USERS} users added through the service, measured ${MEASURED} and analyzed\n\n`);
  const seeding = await backend.open();
  let workspaceId: number;
  try {
    for (const table of GROWING) await seeding.db.execute(sql.raw(`alter table ${table} set (autovacuum_enabled = false)`));
    workspaceId = await seed(createStore(seeding.db, { cacheTtlMs: 0, keyRing: createKeyRing(generateSecretsKey()) }), async () => {
      await seeding.db.execute(sql`analyze`);
    });
  } finally {
    await seeding.close();
  }
  const [fresh, analyzed] = await backend.reopenWithCopy();
  try {
    await analyzed.db.execute(sql`analyze`);
    const never = await fresh.db.execute(sql`select count(*)::int as n from pg_stat_user_tables where last_analyze is not null or last_autoanalyze is not null`);
    process.stdout.write(`tables analyzed in the ${MEASURED} database: ${JSON.stringify((never as unknown as { rows: unknown[] }).rows[0])}\n`);
    // What the planner's statistics say of users: rows when analyzed (reltuples), and the
    // workspaces the stale histogram knows (n_distinct of workspace_id), against the rows now.
    const stats = sql`select c.reltuples::int as reltuples, (select count(*)::int from users) as rows, s.n_distinct
      from pg_class c left join pg_stats s on s.tablename = c.relname and s.attname = 'workspace_id' where c.relname = 'users'`;
    for (const [label, database] of [[MEASURED, fresh], ['analyzed', analyzed]] as const) {
      process.stdout.write(`users statistics, ${label}: ${JSON.stringify((await database.db.execute(stats) as unknown as { rows: unknown[] }).rows[0])}\n`);
    }
    const freshReads = reads(createStore(fresh.db, { cacheTtlMs: 0, keyRing: createKeyRing(generateSecretsKey()) }), workspaceId);
    const analyzedReads = reads(createStore(analyzed.db, { cacheTtlMs: 0, keyRing: createKeyRing(generateSecretsKey()) }), workspaceId);
    if (options.plans) {
      await printPlans(fresh, freshReads, MEASURED);
      await printPlans(analyzed, analyzedReads, 'analyzed');
    }
    const timings = await timeByTurns(freshReads.map((read, i) => [read, analyzedReads[i]!] as const));
    process.stdout.write(`\n| ${backend.name}, ${USERS} users | ${MEASURED} p50 ms | analyzed p50 ms | ${MEASURED} speed ÷ analyzed | goal ≥ 0.8× |\n| --- | ---: | ---: | ---: | --- |\n`);
    // A named prepared statement (PostgreSQL) is planned anew on every execution as long as
    // its custom plans look cheaper than its generic one: say which way each went.
    for (const [label, database] of [[MEASURED, fresh], ['analyzed', analyzed]] as const) {
      const prepared = await database.db.execute(sql`select name, generic_plans::int, custom_plans::int from pg_prepared_statements where name like 'wum%' order by name`).catch(() => undefined);
      const rows = (prepared as unknown as { rows: Array<{ name: string; generic_plans: number; custom_plans: number }> } | undefined)?.rows ?? [];
      if (rows.length > 0) process.stdout.write(`prepared statements, ${label}: ${rows.map((r) => `${r.name} generic ${r.generic_plans} custom ${r.custom_plans}`).join('; ')}\n`);
    }
    timings.forEach(([freshMs, analyzedMs], i) => {
      const speed = analyzedMs / freshMs;
      process.stdout.write(`| ${freshReads[i]!.label} | ${freshMs.toFixed(2)} | ${analyzedMs.toFixed(2)} | ${load.ratio(speed)} | ${load.verdict(speed >= 0.8)} |\n`);
    });
  } finally {
    await fresh.close();
    await analyzed.close();
  }
}

if (options.backend === 'both' || options.backend === 'pglite') {
  const dir = mkdtempSync(join(tmpdir(), 'wum-plans-fresh-'));
  const [seeded, copy] = [join(dir, 'fresh'), join(dir, 'analyzed')];
  try {
    await measure({
      name: 'PGlite',
      open: () => openDatabase({ kind: 'pglite', dataDir: seeded }),
      reopenWithCopy: async () => {
        cpSync(seeded, copy, { recursive: true });
        return [await openDatabase({ kind: 'pglite', dataDir: seeded }), await openDatabase({ kind: 'pglite', dataDir: copy })];
      },
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (options.backend === 'both' || options.backend === 'postgres') {
  const cluster = await startPostgresCluster();
  if (!cluster) throw new Error('the PostgreSQL rows need the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
  const urlOf = (name: string) => cluster.url.replace(/\/postgres$/, `/${name}`);
  try {
    await withClient(cluster.url, (client) => client.query('create database wum_plans_fresh'));
    await measure({
      name: 'PostgreSQL',
      open: () => openDatabase({ kind: 'postgres', url: urlOf('wum_plans_fresh'), poolSize: 1 }),
      reopenWithCopy: async () => {
        await withClient(cluster.url, (client) => client.query('create database wum_plans_analyzed template wum_plans_fresh'));
        const open = (name: string) => openDatabase({ kind: 'postgres', url: urlOf(name), poolSize: 1 });
        return [await open('wum_plans_fresh'), await open('wum_plans_analyzed')];
      },
    });
  } finally {
    cluster.stop();
  }
}
process.stdout.write(`\n${load.summary()}\n`);
