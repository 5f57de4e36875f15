/*
 * `npm run bench:listing [-- --sizes 10000,1000000,10000000]`: the service's page statement
 * against the plain statement a competent developer would write for the same page (`OFFSET`
 * on the `(workspace_id, status, id)` index, the page's rows and apps, and the total from one
 * counter row), for the first, middle, last and random pages of a workspace of each size, on
 * a throw-away PostgreSQL cluster. Both are database time: the service's statement is
 * recorded from the service itself and replayed through `pg` like the plain one. One client,
 * one statement at a time, each a prepared statement; the plain page, the service's page and
 * the service's first page by turns (so that a shared machine's load falls on all three
 * alike), the service's SERVICE_REPEAT times per plain run; p50 and p99 of up to RUNS rounds
 * (fewer when the plain statement is slow: at least MIN_RUNS, or as many as fit in SECONDS),
 * after warm-up runs; each page's ratio to the first page (measured in the same rounds) and
 * to `OFFSET`. Those workspaces are seeded set-based, then VACUUM ANALYZE. Then a workspace of
 * the smallest size (at most 10,000) in a new database, its users added one by one through the
 * service as users arrive: its first and last pages timed at once ("fresh", never analyzed)
 * and after `ANALYZE` ("settled").
 * See docs/performance.md, "What was tuned" and "Fast on data as it arrives".
 */
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { PAGE_DEFAULTS } from '../src/core/pagination.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createStore } from '../src/storage/store.ts';
import { createKeyRing, generateSecretsKey } from '../src/core/secrets/secret-box.ts';
import { startPostgresCluster, withClient } from '../harness/postgres-cluster.ts';
import { SYSTEM_ACTOR } from '../src/core/actor.ts';
import { DEMO_PRODUCTS } from '../src/core/demo.ts';
import { putProduct } from '../src/core/products/products-service.ts';
import { addUser } from '../src/core/users/users-service.ts';
import { createWorkspace } from '../src/core/workspaces/workspaces-service.ts';
import { watchMachineLoad } from './machine-load.ts';
import { LatencyRecorder } from './measurement.ts';
import { recordQueries } from './sql-replay.ts';
import { lastPage } from './requests.ts';
import { seedProducts, seedWorkspaces, vacuumAnalyze, withSeedingClient } from './seed.ts';

const load = watchMachineLoad();

const { values: options } = parseArgs({
  options: { sizes: { type: 'string', default: '10000,1000000,10000000' } },
});
const SIZES = options.sizes.split(',').map((s) => Number(s.trim()));
if (SIZES.some((n) => !Number.isInteger(n) || n < 100)) throw new Error(`--sizes: whole numbers of users, at least 100: ${options.sizes}`);

const WARM_UP = 3;
const RUNS = 300;
const MIN_RUNS = 15;
const SECONDS = 4;
/** Runs of each service statement per run of the plain one (which can be 1,000 times slower). */
const SERVICE_REPEAT = 5;
/** The page's goals (docs/performance.md): at most this many times the first page, and no slower than OFFSET. */
const GOAL_OF_FIRST = 1.5;

/** p50 and p99 (ms) of some runs, and how many. */
interface Timing {
  readonly p50: number;
  readonly p99: number;
  readonly runs: number;
}

/**
 * p50 and p99 (ms) of each of `works`, each called with the run's index, run by turns (in a
 * rotating order) so that all see the same load on a shared machine; the first of `works`
 * runs once a round, the others `repeat` times (they are the fast ones).
 */
async function timeByTurns(works: ReadonlyArray<(run: number) => Promise<unknown>>, repeat: number): Promise<Timing[]> {
  for (let i = 0; i < WARM_UP; i += 1) for (const work of works) await work(i);
  const latencies = works.map(() => new LatencyRecorder(RUNS * repeat));
  const deadline = performance.now() + SECONDS * 1000;
  let runs = 0;
  while (runs < RUNS && (runs < MIN_RUNS || performance.now() < deadline)) {
    for (let turn = 0; turn < works.length; turn += 1) {
      const which = (turn + runs) % works.length;
      for (let r = 0; r < (which === 0 ? 1 : repeat); r += 1) {
        const started = performance.now();
        await works[which]!(runs * repeat + r);
        latencies[which]!.record(performance.now() - started);
      }
    }
    runs += 1;
  }
  return latencies.map((l, i) => ({ p50: l.quantile(0.5), p99: l.quantile(0.99), runs: i === 0 ? runs : runs * repeat }));
}

/**
 * The plain page: the ids by OFFSET on the status index, then those rows with their apps (the
 * same columns and JSON the service returns), and the total from one counter row.
 */
const PLAIN_PAGE = `with page_ids as (
    select id from users where workspace_id = $1 and status = 'active' order by id limit $2 offset $3
  )
  select (select n from bench_plain_counts where workspace_id = $1 and status = 'active') as total,
    u.id, u.public_id, u.email, u.role, u.first_name, u.last_name, u.status, u.external_id, u.scim_attributes,
    u.scim_deleted, u.version, u.created_at, u.updated_at,
    coalesce((select json_agg(json_build_object('name', ua.product, 'role', ua.role) order by ua.position)
      from user_apps ua where ua.workspace_id = $1 and ua.user_id = u.id), '[]'::json) as apps
  from page_ids join users u on u.workspace_id = $1 and u.id = page_ids.id
  order by u.id`;

/**
 * A workspace of `users` added one by one through the service (with apps, as `POST /users`
 * adds them) in a new database, and its first and last pages through the service timed
 * fresh (never analyzed) and settled (after `ANALYZE`), by turns as above.
 */
async function listingAddedThroughService(clusterUrl: string, users: number): Promise<void> {
  await withClient(clusterUrl, (client) => client.query('create database wum_listing_api'));
  const database = await openDatabase({ kind: 'postgres', url: clusterUrl.replace(/\/postgres$/, '/wum_listing_api'), poolSize: 1 });
  try {
    const store = createStore(database.db, { cacheTtlMs: 0, keyRing: createKeyRing(generateSecretsKey()) });
    for (const product of DEMO_PRODUCTS) await putProduct(store, product.name, product.roles, SYSTEM_ACTOR);
    const id = (await createWorkspace(store, 'api', undefined, SYSTEM_ACTOR)).workspace.id;
    const started = performance.now();
    for (let i = 0; i < users; i += 1) {
      const apps = [{ name: 'crm', role: 'member' }, { name: 'analytics', role: 'viewer' }];
      await addUser(store, id, { email: `u${i}@api.example`, role: 'non_owner', apps }, SYSTEM_ACTOR);
    }
    process.stdout.write(`\nadded ${users} users through the service in ${((performance.now() - started) / 1000).toFixed(1)} s\n\n`);
    const pageSize = PAGE_DEFAULTS.pageSize;
    const page = (pageNumber: number) => () => store.users.findPage(id, 'active', { pageNumber, pageSize });
    const pages: Array<[string, number]> = [['first (1)', 1], [`last (${lastPage(users)})`, lastPage(users)]];
    const time = async () => (await timeByTurns(pages.map(([, n]) => page(n)), 1)).map((t) => t.p50);
    const fresh = await time();
    await database.db.execute(sql`analyze`);
    const settled = await time();
    process.stdout.write('| users (seed) | page | fresh p50 | settled p50 | fresh ÷ settled | goal |\n| ---: | --- | ---: | ---: | ---: | --- |\n');
    pages.forEach(([label], i) => {
      const ratio = fresh[i]! / settled[i]!;
      // Fresh at least 0.8× as fast: its time at most 1.25× the settled time.
      process.stdout.write(`| ${users} (added through the service) | ${label} | ${fresh[i]!.toFixed(2)} | ${settled[i]!.toFixed(2)} | ${load.ratio(ratio)} | ${load.verdict(ratio <= 1.25)} ≥ 0.8× as fast |\n`);
    });
  } finally {
    await database.close();
  }
}

const cluster = await startPostgresCluster();
if (!cluster) throw new Error('npm run bench:listing needs the PostgreSQL server binaries (initdb, pg_ctl) on PATH');
try {
  await withSeedingClient(cluster.url, async (run) => {
    await seedProducts(run);
    await run('create table bench_plain_counts (workspace_id int8, status text, n int8, primary key (workspace_id, status))');
    const workspaces: Array<{ users: number; id: number }> = [];
    for (const users of SIZES) {
      const started = performance.now();
      const [ws] = await seedWorkspaces(run, [`w${users}`], users);
      await run(`insert into bench_plain_counts select workspace_id, status, count(*) from users where workspace_id = $1 group by 1, 2`, [ws!.id]);
      process.stdout.write(`seeded ${users} users in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
      workspaces.push({ users, id: ws!.id });
    }
    const vacuumStarted = performance.now();
    await vacuumAnalyze(run);
    await run('vacuum analyze bench_plain_counts');
    process.stdout.write(`vacuum analyze ${((performance.now() - vacuumStarted) / 1000).toFixed(1)} s\n`);

    const database = await openDatabase({ kind: 'postgres', url: cluster.url, poolSize: 1 });
    try {
      const store = createStore(database.db, { cacheTtlMs: 0, keyRing: createKeyRing(generateSecretsKey()) });
      const pageSize = PAGE_DEFAULTS.pageSize;
      const version = (await run("select current_setting('server_version') as v"))[0]!.v;
      process.stdout.write(`\nlisting pages of ${pageSize}, PostgreSQL ${String(version)}; one client; ms\n\n`);
      process.stdout.write(
        '| users | page | service p50 | service p99 | × first page (p50) | OFFSET p50 | OFFSET p99 | service ÷ OFFSET (p50) | runs (OFFSET/service) | goals |\n' +
          '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n',
      );
      for (const { users, id } of workspaces) {
        const last = lastPage(users);
        const randomPages = Array.from({ length: RUNS * SERVICE_REPEAT + WARM_UP }, () => randomInt(1, last + 1));
        const kinds: Array<[string, (run: number) => number]> = [
          ['first (1)', () => 1],
          [`middle (${Math.ceil(last / 2)})`, () => Math.ceil(last / 2)],
          [`last (${last})`, () => last],
          ['random', (i) => randomPages[i]!],
        ];
        // The service's page statement as it sends it, with the offset found by a page no other has.
        const probePage = 777_777;
        let totals = { total: 0 };
        const recorded = await recordQueries(async () => {
          totals = await store.users.findPage(id, 'active', { pageNumber: probePage, pageSize });
        });
        const statement = recorded.find((q) => q.values.includes((probePage - 1) * pageSize))!;
        const offsetAt = statement.values.indexOf((probePage - 1) * pageSize);
        const servicePage = (pageNumber: number) =>
          run(statement.text, statement.values.map((v, i) => (i === offsetAt ? (pageNumber - 1) * pageSize : v)), statement.name);
        const counted = Number((await run(`select count(*) as n from users where workspace_id = $1 and status = 'active'`, [id]))[0]!.n);
        if (totals.total !== counted) throw new Error(`total ${totals.total} against count(*) ${counted}`);
        for (const [label, pageOf] of kinds) {
          // The plain statement, this page and the first page by turns: the first page's time
          // is measured at the same moments as this page's.
          const [plain, service, first] = (await timeByTurns(
            [
              (i) => run(PLAIN_PAGE, [id, pageSize, (pageOf(i) - 1) * pageSize], 'bench_plain_page'),
              (i) => servicePage(pageOf(i)),
              () => servicePage(1),
            ],
            SERVICE_REPEAT,
          )) as [Timing, Timing, Timing];
          const ofFirst = service.p50 / first.p50;
          const ofPlain = service.p50 / plain.p50;
          const goals = `${load.verdict(ofFirst <= GOAL_OF_FIRST)} ≤ ${GOAL_OF_FIRST}× first; ${load.verdict(ofPlain <= 1)} ≤ OFFSET`;
          process.stdout.write(
            `| ${users} | ${label} | ${service.p50.toFixed(2)} | ${service.p99.toFixed(2)} | ${ofFirst.toFixed(2)} | ` +
              `${plain.p50.toFixed(2)} | ${plain.p99.toFixed(2)} | ${ofPlain.toFixed(2)} | ${plain.runs}/${service.runs} | ${goals} |\n`,
          );
        }
      }
      process.stdout.write(`\ntotal_count equals count(*) at every size\n`);
    } finally {
      await database.close();
    }
  });
  await listingAddedThroughService(cluster.url, Math.min(SIZES[0]!, 10_000));
  process.stdout.write(`\n${load.summary()}\n`);
} finally {
  cluster.stop();
}
