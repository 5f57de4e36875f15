/*
 * `npm run bench:plans-fresh [-- --users 3000 --runs 100 --backend pglite|postgres|both --plans]`:
 * the reads whose speed could hang on statistics, in process, on a new database whose users
 * were added one by one through the service (as `POST /users` adds them), timed at once
 * ("fresh": tables never analyzed; on PostgreSQL autovacuum is off for them so that it cannot
 * analyze them meanwhile) and after one `ANALYZE` ("analyzed"), by turns, on embedded PGlite
 * and on a throw-away PostgreSQL. With `--plans`, each statement's `EXPLAIN (ANALYZE, BUFFERS)`
 * fresh and analyzed, and the rows it read of each table (`pg_stat_xact_user_tables`, which
 * also sees the statements inside `user_page_ids`). The goal: fresh at least 0.8× as fast as
 * analyzed (docs/performance.md, "Fast on data as it arrives").
 */
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
import type { Store } from '../src/core/ports.ts';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { captureStatements, explainAnalyze } from '../test/helpers/statements.ts';
import { LatencyRecorder } from './measurement.ts';

const { values: options } = parseArgs({
  options: {
    users: { type: 'string', default: '3000' },
    runs: { type: 'string', default: '100' },
    backend: { type: 'string', default: 'both' },
    plans: { type: 'boolean', default: false },
  },
});
const USERS = Number(options.users);
const RUNS = Number(options.runs);
const WARM_UP = 5;
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
 */
async function seed(store: Store): Promise<number> {
  for (const product of DEMO_PRODUCTS) await putProduct(store, product.name, product.roles, SYSTEM_ACTOR);
  const id = (await createWorkspace(store, 'plans', undefined, SYSTEM_ACTOR)).workspace.id;
  const other = (await createWorkspace(store, 'plans-other', undefined, SYSTEM_ACTOR)).workspace.id;
  const started = performance.now();
  for (let i = 0; i < USERS; i += 1) {
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
  return [
    { label: 'page 1 (reference)', run: page('active', 1) },
    { label: 'page 5 of 100, status=active (reference)', run: page('active', 5) },
    { label: 'page 5 of 100, status=all', run: page('all', 5) },
    { label: 'q=first123 (11 users)', run: search('first123') },
    { label: 'q=first12 (111 users)', run: search('first12') },
    { label: `GET /events after ${Math.round(events / 2)}, limit 50`, run: () => listEvents(store, workspaceId, Math.round(events / 2), 50) },
  ];
}

/** p50 (ms) of each read over `RUNS` rounds, the reads by turns so that load falls on all alike. */
async function timeByTurns(all: readonly Read[]): Promise<number[]> {
  for (let i = 0; i < WARM_UP; i += 1) for (const read of all) await read.run();
  const latencies = all.map(() => new LatencyRecorder(RUNS));
  for (let round = 0; round < RUNS; round += 1) {
    for (let turn = 0; turn < all.length; turn += 1) {
      const which = (turn + round) % all.length;
      const started = performance.now();
      await all[which]!.run();
      latencies[which]!.record(performance.now() - started);
    }
  }
  return latencies.map((l) => l.quantile(0.5));
}

/** Prints each statement of each read with its `EXPLAIN (ANALYZE, BUFFERS)` and the rows it read. */
async function printPlans(database: OpenDatabase, all: readonly Read[], when: string): Promise<void> {
  for (const read of all) {
    const statements = await captureStatements(database.db, read.run);
    for (const statement of statements) {
      const { plan, read: counted } = await explainAnalyze(database.db, statement);
      const rows = [...counted].map(([table, c]) => `${table} ${c.rows}`).join(', ');
      process.stdout.write(`\n--- ${when}: ${read.label}; rows read: ${rows || 'none'}\n${plan}\n`);
    }
  }
}

/** Seeds a new database of `backend`, then times (and with `--plans` explains) each read fresh and analyzed. */
async function measure(backend: string, database: OpenDatabase): Promise<void> {
  process.stdout.write(`\n## ${backend}: ${USERS} users added through the service\n\n`);
  for (const table of GROWING) await database.db.execute(sql.raw(`alter table ${table} set (autovacuum_enabled = false)`));
  const store = createStore(database.db, { cacheTtlMs: 0 });
  const workspaceId = await seed(store);
  const all = reads(store, workspaceId);
  if (options.plans) await printPlans(database, all, 'fresh');
  const fresh = await timeByTurns(all);
  await database.db.execute(sql`analyze`);
  if (options.plans) await printPlans(database, all, 'analyzed');
  const analyzed = await timeByTurns(all);
  process.stdout.write(`\n| ${backend}, ${USERS} users | fresh p50 ms | analyzed p50 ms | fresh speed ÷ analyzed | goal ≥ 0.8× |\n| --- | ---: | ---: | ---: | --- |\n`);
  all.forEach((read, i) => {
    const speed = analyzed[i]! / fresh[i]!;
    process.stdout.write(`| ${read.label} | ${fresh[i]!.toFixed(2)} | ${analyzed[i]!.toFixed(2)} | ${speed.toFixed(2)}× | ${speed >= 0.8 ? 'met' : 'NOT met'} |\n`);
  });
}

if (options.backend === 'both' || options.backend === 'pglite') {
  const database = await openDatabase({ kind: 'memory' });
  try {
    await measure('PGlite', database);
  } finally {
    await database.close();
  }
}
if (options.backend === 'both' || options.backend === 'postgres') {
  const cluster = await startPostgresCluster();
  if (!cluster) throw new Error('the PostgreSQL rows need the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
  try {
    const database = await openDatabase({ kind: 'postgres', url: cluster.url, poolSize: 1 });
    try {
      await measure('PostgreSQL', database);
    } finally {
      await database.close();
    }
  } finally {
    cluster.stop();
  }
}
