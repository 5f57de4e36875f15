/*
 * `npm run bench:listing`: the listing design at 1,000,000 users, before and after, on a
 * throw-away PostgreSQL cluster: what `count(*)` and `OFFSET` cost (the obvious way to serve
 * `total_count` and page N) against what the service runs (the sum of the per-block user
 * counts, and the page statement that skips at most one block of index entries). One client,
 * one statement at a time; median and maximum of 15 runs after 3 warm-up runs, in ms.
 * See docs/performance.md, "What was tuned".
 */
import { PAGE_DEFAULTS, type PageRequest } from '../src/core/pagination.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createStore } from '../src/storage/store.ts';
import { startPostgresCluster } from '../test/helpers/postgres-cluster.ts';
import { lastPage } from './requests.ts';
import { seedProducts, seedWorkspaces, vacuumAnalyze, withSeedingClient } from './seed.ts';

const USERS = 1_000_000;
const WARM_UP = 3;
const RUNS = 15;

/** Median and maximum time of `work`, in ms. */
async function time(work: () => Promise<unknown>): Promise<{ median: number; max: number }> {
  for (let i = 0; i < WARM_UP; i += 1) await work();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(RUNS / 2)]!, max: times[RUNS - 1]! };
}

const cluster = await startPostgresCluster();
if (!cluster) throw new Error('npm run bench:listing needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
try {
  await withSeedingClient(cluster.url, async (run) => {
    await seedProducts(run);
    const [big] = await seedWorkspaces(run, ['big'], USERS);
    await vacuumAnalyze(run);
    const database = await openDatabase({ kind: 'postgres', url: cluster.url, poolSize: 1 });
    try {
      const store = createStore(database.db, { cacheTtlMs: 0 });
      const workspaceId = big!.id;
      const pageSize = PAGE_DEFAULTS.pageSize;
      const page = (pageNumber: number): PageRequest => ({ pageNumber, pageSize });
      const last = lastPage(USERS);
      const middle = Math.ceil(last / 2);
      const byOffset = (pageNumber: number) => () =>
        run(`select id from users where workspace_id = $1 and status = 'active' order by id limit $2 offset $3`, [
          workspaceId,
          pageSize,
          (pageNumber - 1) * pageSize,
        ]);
      const rows: Array<[string, () => Promise<unknown>]> = [
        ['count(*) of the active users', () => run(`select count(*) from users where workspace_id = $1 and status = 'active'`, [workspaceId])],
        ['sum of the per-block counts (the service)', () => run(`select sum(user_count) from user_counts where workspace_id = $1 and status = 'active'`, [workspaceId])],
        [`ids of the middle page (${middle}) by OFFSET`, byOffset(middle)],
        [`ids of the last page (${last}) by OFFSET`, byOffset(last)],
        [`middle page: total, rows and apps (the service)`, () => store.users.findPage(workspaceId, 'active', page(middle))],
        [`last page: total, rows and apps (the service)`, () => store.users.findPage(workspaceId, 'active', page(last))],
        ['first page: total, rows and apps (the service)', () => store.users.findPage(workspaceId, 'active', page(1))],
      ];
      process.stdout.write(`listing at ${USERS} users, PostgreSQL ${(await run("select current_setting('server_version') as v"))[0]!.v}\n\n`);
      process.stdout.write('| statement | median ms | max ms |\n| --- | --- | --- |\n');
      for (const [label, work] of rows) {
        const { median, max } = await time(work);
        process.stdout.write(`| ${label} | ${median.toFixed(2)} | ${max.toFixed(2)} |\n`);
      }
    } finally {
      await database.close();
    }
  });
} finally {
  cluster.stop();
}
