/*
 * Users seeded as users arrive: through `POST /users` (10 in flight, one request per row, as
 * `wum users import` sends them) and through `wum users import` itself (bench/import-seed.ts),
 * each into its own workspace, then page 1 and an add measured at once ("fresh": tables never
 * analyzed) and again once the store has settled ("settled": after autovacuum on PostgreSQL,
 * after the embedded store's own maintenance on PGlite, has analyzed `users`). On PGlite also
 * the data directory's growth under a steady add/deactivate/reactivate load, table by table.
 * Every other row of the benchmark keeps its set-based seed (bench/seed.ts) for large sizes.
 * `npm run bench:api-seeded [-- --quick]` runs this alone; `npm run bench` runs it too.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { bytesByTable, relationFileBytes, relationOwners, type RelationFileBytes, type RelationOwners } from './data-dir-shares.ts';
import { importUsers } from './import-seed.ts';
import { sendRequest } from '../harness/server-process.ts';
import { runHttpLoad, type HttpRequestSpec } from './http-load.ts';
import type { ServerHandle } from './processes.ts';
import { ratio, type ReportRow, type ReportSection } from './report.ts';
import { addRequest, API, headersOf, listRequest, removeRequest } from './requests.ts';
import type { SeededWorkspace } from './seed.ts';

/** Admin token of the servers this module starts. */
export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
/** Requests in flight while seeding through the API. */
const SEED_CONCURRENCY = 10;
/** Longest wait for the store to settle (autovacuum's naptime is a minute). */
const SETTLE_TIMEOUT_MS = 180_000;

/** What {@link measureApiSeeded} needs. */
export interface ApiSeededOptions {
  readonly backend: 'PostgreSQL' | 'PGlite';
  /** Starts the server (its env must include `ADMIN_TOKEN` = {@link BENCH_ADMIN_TOKEN}). */
  readonly start: () => Promise<ServerHandle>;
  /**
   * Called just before a seed; returns the wait for the store to settle after it: resolves
   * true once `users` was analyzed after the seed ended at `since` (epoch ms), false on time-out.
   */
  readonly settling: (server: ServerHandle) => Promise<(since: number) => Promise<boolean>>;
  /** PGlite: what the store's own maintenance has done so far (read around each fresh row, which it may delay; noted on the seed's row). */
  readonly maintenance?: (server: ServerHandle) => Promise<MaintenanceTally>;
  /** Workspace sizes, each seeded into its own workspace. */
  readonly sizes: readonly number[];
  /** How each size is seeded, each into its own workspace (default {@link SEEDS}: both). */
  readonly seeds?: readonly Seed[];
  /** PGlite: its DATA_DIR, whose size is measured under a steady change load of this many changes per block. */
  readonly growth?: { readonly dataDir: string; readonly changesPerBlock: number; readonly blocks: number };
  readonly connections: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly log: (message: string) => void;
}

/**
 * Runs `count` requests built by `next`, `SEED_CONCURRENCY` in flight; throws on the first
 * failure. Returns requests per second; `progress` hears every 10,000th request (a long seed).
 */
export async function sendAll(port: number, count: number, next: (i: number) => HttpRequestSpec, progress?: (sent: number, perSecond: number) => void): Promise<number> {
  const started = performance.now();
  let issued = 0;
  const worker = async () => {
    while (issued < count) {
      if (progress && issued > 0 && issued % 10_000 === 0) progress(issued, issued / ((performance.now() - started) / 1000));
      const spec = next(issued++);
      const res = await sendRequest(port, spec.method, spec.path, {
        host: spec.headers.host!,
        headers: spec.headers,
        ...(spec.body ? { body: JSON.parse(spec.body) as unknown } : {}),
      });
      if (res.status >= 300) throw new Error(`${spec.method} ${spec.path}: ${res.status} ${res.body}`);
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker));
  return count / ((performance.now() - started) / 1000);
}

/** Creates a workspace through the admin API (and the products the adds name, once). */
export async function createWorkspace(port: number, subdomain: string): Promise<SeededWorkspace> {
  const admin = { host: '127.0.0.1', headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}` } };
  for (const [name, roles] of [['crm', ['admin', 'member']], ['analytics', ['editor', 'viewer']]] as const) {
    await sendRequest(port, 'PUT', `/admin/v1/products/${name}`, { ...admin, body: { roles } });
  }
  const res = await sendRequest(port, 'POST', '/admin/v1/workspaces', { ...admin, body: { subdomain } });
  if (res.status !== 201) throw new Error(`workspace ${subdomain}: ${res.status} ${res.body}`);
  const created = res.json() as { workspace: { id: string }; api_key: { key: string } };
  return { id: 0, subdomain, apiKey: created.api_key.key, users: 0 };
}

/** Bytes of a directory on disk (`du`), in MB. */
function directoryMb(dir: string): number {
  return Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) / 1024;
}

/** How a workspace's users arrive: `POST /users` from this process, or `wum users import` of a CSV file. */
export type Seed = 'api' | 'import';

/** The seeds of a run, in order. */
export const SEEDS: readonly Seed[] = ['api', 'import'];

/** How each seed is named in a row. */
export const SEED_WORDS: Record<Seed, string> = { api: 'added through the API', import: 'seeded with wum users import' };

/** Adds `size` users to `ws` the way `seed` says; returns users per second. */
function seedUsers(seed: Seed, port: number, ws: SeededWorkspace, size: number, progress: (sent: number, perSecond: number) => void): Promise<number> {
  return seed === 'api' ? sendAll(port, size, () => addRequest(ws), progress) : importUsers(port, ws, size, SEED_CONCURRENCY);
}

/**
 * For each size and seed: a new workspace, that many users added (through the API, or by
 * `wum users import`), then page 1 and `POST /users` measured fresh, the wait until `users`
 * was analyzed, and both measured again (settled). The fresh rows are compared to the
 * settled ones (goal ≥ 0.8×); each settled page 1 to the smallest size's of the same seed
 * (goal ≥ 0.8×: a page's cost does not grow with the workspace).
 */
export async function measureApiSeeded(options: ApiSeededOptions): Promise<ReportSection> {
  const { backend, log } = options;
  const seeds = options.seeds ?? SEEDS;
  const server = await options.start();
  const rows: ReportRow[] = [];
  const load = async (next: () => HttpRequestSpec) => {
    await runHttpLoad({ port: server.port, connections: options.connections, seconds: options.warmupSeconds, next });
    return runHttpLoad({ port: server.port, connections: options.connections, seconds: options.seconds, next });
  };
  let stopped = false;
  try {
    const smallestSettled = new Map<Seed, { size: number; perSecond: number }>();
    for (const size of options.sizes) {
      for (const seed of seeds) {
        const ws = await createWorkspace(server.port, `${seed}${size}`);
        const waitSettled = await options.settling(server);
        const words = `${size} users ${SEED_WORDS[seed]}`;
        const addRate = await seedUsers(seed, server.port, ws, size, (sent, rate) => log(`${backend}: ${sent} of ${size} added (${rate.toFixed(0)}/s)`));
        const seededAt = Date.now();
        log(`${backend}: ${words} at ${addRate.toFixed(0)}/s`);
        const before = await options.maintenance?.(server);
        const freshStarted = performance.now();
        const freshPage = await load(() => listRequest(ws, 1));
        const pageSeconds = (performance.now() - freshStarted) / 1000;
        const afterPage = await options.maintenance?.(server);
        let beforeAdd = afterPage;
        if (options.maintenance && afterPage) {
          // PGlite: page 1 once more before the adds (which bring the next ANALYZE of users):
          // whether the fresh window's speed is the tables' or the moment's, right after the seed.
          const again = await load(() => listRequest(ws, 1));
          beforeAdd = await options.maintenance(server);
          log(`${backend}: page 1 fresh, a second window: ${again.perSecond.toFixed(0)} req/s (p50 ${again.p50Ms.toFixed(1)} ms) against ${freshPage.perSecond.toFixed(0)} in the first; meanwhile ${describeTally(afterPage, beforeAdd)}`);
        }
        const addStarted = performance.now();
        const freshAdd = await load(() => addRequest(ws));
        const addSeconds = (performance.now() - addStarted) / 1000;
        const afterAdd = await options.maintenance?.(server);
        const busyNote =
          before && afterPage && beforeAdd && afterAdd
            ? `; the store's maintenance during fresh page 1 (${pageSeconds.toFixed(0)} s): ${describeTally(before, afterPage)}; during the fresh adds (${addSeconds.toFixed(0)} s): ${describeTally(beforeAdd, afterAdd)}`
            : '';
        if (busyNote) log(`${backend}: ${busyNote.slice(2)}`);
        const settled = await waitSettled(seededAt);
        log(`${backend}: users ${settled ? 'analyzed' : 'NOT analyzed'} ${((Date.now() - seededAt) / 1000).toFixed(0)} s after the seed ended`);
        const beforeSettled = await options.maintenance?.(server);
        const settledPage = await load(() => listRequest(ws, 1));
        const afterSettled = await options.maintenance?.(server);
        if (beforeSettled && afterSettled) log(`${backend}: page 1 settled: ${settledPage.perSecond.toFixed(0)} req/s; meanwhile ${describeTally(beforeSettled, afterSettled)}`);
        const settledAdd = await load(() => addRequest(ws));
        const against = (label: string, perSecond: number, text: string, minimum: number) => (row: ReportRow): ReportRow => {
          const withBase = { ...row, baseline: { label, perSecond } };
          return { ...withBase, target: { text, met: (ratio(withBase) ?? 0) >= minimum && row.measured!.errors === 0 } };
        };
        const settledNote = settled ? undefined : `users not analyzed within ${SETTLE_TIMEOUT_MS / 1000} s`;
        const smallest = smallestSettled.get(seed);
        const seedRow =
          seed === 'api'
            ? `${backend} seed: POST /users × ${size}, ${SEED_CONCURRENCY} in flight`
            : `${backend} seed: wum users import of ${size} rows, --concurrency ${SEED_CONCURRENCY}`;
        rows.push(
          { scenario: seedRow, note: `${addRate.toFixed(0)} users/s${busyNote}` },
          against('settled', settledPage.perSecond, '≥ 0.8×', 0.8)({ scenario: `${backend} GET /users page 1, ${words}, fresh`, measured: freshPage }),
          ((row: ReportRow) => (smallest ? against(`settled page 1 at ${smallest.size}`, smallest.perSecond, '≥ 0.8×', 0.8)(row) : row))({
            scenario: `${backend} GET /users page 1, ${words}, settled`,
            measured: settledPage,
            ...(settledNote ? { note: settledNote } : {}),
          }),
          against('settled', settledAdd.perSecond, '≥ 0.8×', 0.8)({ scenario: `${backend} POST /users, ${words}, fresh`, measured: freshAdd }),
          { scenario: `${backend} POST /users, ${words}, settled`, measured: settledAdd },
        );
        if (!smallest) smallestSettled.set(seed, { size, perSecond: settledPage.perSecond });
      }
    }
    if (options.growth) {
      const stop = async () => {
        stopped = true;
        await server.stop();
      };
      rows.push(...(await measureGrowth(server.port, options.growth, stop, log)));
    }
  } finally {
    if (!stopped) await server.stop();
  }
  const seedTitle = seeds.map((seed) => SEED_WORDS[seed]).join(', and ');
  return { title: `${backend}, users ${seedTitle} (fresh, then settled)`, rows };
}

/** The data directory after one block of changes. */
interface GrowthSnapshot {
  readonly changes: number;
  readonly perSecond: number;
  readonly totalMb: number;
  readonly walMb: number;
  readonly files: RelationFileBytes;
}

/**
 * The data directory's size under a steady load of changes (one add, one deactivation, one
 * reactivation, in turn), measured after each block: MB per 100,000 changes per block, the
 * WAL's size, and how much each table grew. `stop` stops the server after the last block, so
 * the directory can be opened to learn which table owns which file (bench/data-dir-shares.ts).
 */
async function measureGrowth(
  port: number,
  growth: NonNullable<ApiSeededOptions['growth']>,
  stop: () => Promise<void>,
  log: (message: string) => void,
): Promise<ReportRow[]> {
  const ws = await createWorkspace(port, 'churn');
  const added: string[] = [];
  // Change k deactivates the user added LAG changes earlier and reactivates the one added
  // 2 × LAG earlier: each user once each, long after its add was answered (LAG ≫ in flight).
  const LAG = 40;
  const change = (i: number): HttpRequestSpec => {
    const k = Math.floor(i / 3);
    const turn = i % 3;
    if (turn === 0 || k < 2 * LAG) {
      const spec = addRequest(ws);
      added.push((JSON.parse(spec.body!) as { user: { email: string } }).user.email);
      return spec;
    }
    const email = added[added.length - (turn === 1 ? LAG : 2 * LAG)]!;
    if (turn === 1) return removeRequest(ws, email);
    return { method: 'PATCH', path: `${API}/users/${encodeURIComponent(email)}`, headers: headersOf(ws, true), body: JSON.stringify({ user: { status: 'active' } }) };
  };
  const snapshot = (changes: number, perSecond: number): GrowthSnapshot => ({
    changes,
    perSecond,
    totalMb: directoryMb(growth.dataDir),
    walMb: directoryMb(join(growth.dataDir, 'pg_wal')),
    files: relationFileBytes(growth.dataDir),
  });
  const snapshots = [snapshot(0, 0)];
  for (let block = 1; block <= growth.blocks; block += 1) {
    const offset = (block - 1) * growth.changesPerBlock;
    const rate = await sendAll(port, growth.changesPerBlock, (i) => change(offset + i));
    snapshots.push(snapshot(block * growth.changesPerBlock, rate));
    log(`PGlite data dir after block ${block}: ${snapshots.at(-1)!.totalMb.toFixed(1)} MB`);
  }
  await stop();
  const owners = await relationOwners(growth.dataDir);
  return growthRows(snapshots, owners, growth.changesPerBlock);
}

/** MB with one decimal. */
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/**
 * One row per block: the directory's size, its WAL, MB per 100,000 changes, and each table
 * that grew by at least 0.1 MB with its share of the block's growth; then a row of each
 * table's `pg_total_relation_size` after the last block (which the files' sum must match).
 */
function growthRows(snapshots: readonly GrowthSnapshot[], owners: RelationOwners, changesPerBlock: number): ReportRow[] {
  const rows: ReportRow[] = [];
  for (let block = 1; block < snapshots.length; block += 1) {
    const [before, after] = [snapshots[block - 1]!, snapshots[block]!];
    const perHundredThousand = ((after.totalMb - before.totalMb) * 100_000) / changesPerBlock;
    const [was, is] = [bytesByTable(before.files, owners), bytesByTable(after.files, owners)];
    const deltas = [...is].map(([table, bytes]) => [table, bytes - (was.get(table) ?? 0)] as const);
    const tablesGrowth = deltas.reduce((sum, [, delta]) => sum + delta, 0);
    const grown = deltas.filter(([, delta]) => delta >= 100 * 1024);
    const walGrowth = (after.walMb - before.walMb) * 1024 * 1024;
    const parts = [...grown, ['WAL', walGrowth] as const]
      .sort((a, b) => b[1] - a[1])
      .map(([table, delta]) => `${table} ${delta >= 0 ? '+' : ''}${mb(delta)}`);
    rows.push({
      scenario: `PGlite DATA_DIR growth, block ${block} of ${changesPerBlock} changes (add, deactivate, reactivate)`,
      note:
        `${after.totalMb.toFixed(1)} MB (WAL ${after.walMb.toFixed(0)} MB); ${perHundredThousand.toFixed(1)} MB per 100,000 changes; ` +
        `${after.perSecond.toFixed(0)} changes/s; tables +${mb(tablesGrowth)} MB: ${parts.join(', ')} MB`,
    });
  }
  const sizes = [...owners.totalRelationSize].sort((a, b) => b[1] - a[1]).filter(([, bytes]) => bytes >= 1024 * 1024);
  const last = bytesByTable(snapshots.at(-1)!.files, owners);
  const filesMatch = [...owners.totalRelationSize].every(([table, bytes]) => Math.abs((last.get(table) ?? 0) - bytes) < 64 * 1024);
  rows.push({
    scenario: 'PGlite pg_total_relation_size per table after the last block',
    note: `${sizes.map(([table, bytes]) => `${table} ${mb(bytes)}`).join(', ')} MB (tables under 1 MB left out)${filesMatch ? '' : '; differs from the files read before the server stopped'}`,
  });
  return rows;
}

/** The samples of metric `name` in a `/metrics` text, each with its labels. */
function metricSamples(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  return [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? ([0-9.e+-]+)$`, 'gm'))].map((m) => ({
    labels: Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!])),
    value: Number(m[2]),
  }));
}

/** The server's `/metrics` text. */
async function metricsText(server: ServerHandle): Promise<string> {
  return (await sendRequest(server.port, 'GET', '/metrics', { host: '127.0.0.1' })).body;
}

/** Sum of a metric's samples in `/metrics` whose table label matches `table` (any when omitted). */
async function counted(server: ServerHandle, name: string, table?: string): Promise<number> {
  return metricSamples(await metricsText(server), name)
    .filter((sample) => table === undefined || sample.labels.table === table)
    .reduce((n, sample) => n + sample.value, 0);
}

/** What the embedded store's maintenance has done since the server started, by action, and its passes by table and action. */
export interface MaintenanceTally {
  /** Seconds spent and passes run, by action (`analyze`, `vacuum`, `checkpoint`). */
  readonly byAction: ReadonlyMap<string, { readonly seconds: number; readonly passes: number }>;
  /** Passes by `table action` (`* checkpoint` for a checkpoint). */
  readonly byTable: ReadonlyMap<string, number>;
  /** The server process: CPU seconds so far, seconds in garbage collection by kind, heap in use (bytes). */
  readonly process: { readonly cpuSeconds: number; readonly gcSeconds: ReadonlyMap<string, number>; readonly heapUsedBytes: number };
  /** The machine's load average over the last minute when read. */
  readonly load: number;
  /** CPU seconds (user + system) of the server's threads so far, by thread name (`/proc`; empty elsewhere). */
  readonly threads: ReadonlyMap<string, number>;
}

/** CPU seconds of each thread of process `pid` so far, summed by thread name (Linux `/proc/<pid>/task`). */
function threadSeconds(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const task of tasks) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return byName;
}

/** PGlite: the embedded store's maintenance so far, from `/metrics`. */
export async function pgliteMaintenanceTally(server: ServerHandle): Promise<MaintenanceTally> {
  const text = await metricsText(server);
  const samples = (name: string) => metricSamples(text, name);
  const byAction = new Map<string, { seconds: number; passes: number }>();
  for (const { labels, value } of samples('wum_embedded_maintenance_duration_seconds_sum')) byAction.set(labels.action!, { seconds: value, passes: 0 });
  for (const { labels, value } of samples('wum_embedded_maintenance_duration_seconds_count')) byAction.set(labels.action!, { seconds: byAction.get(labels.action!)?.seconds ?? 0, passes: value });
  const byTable = new Map(samples('wum_embedded_maintenance_passes_total').map(({ labels, value }) => [`${labels.table} ${labels.action}`, value] as const));
  const process = {
    cpuSeconds: samples('process_cpu_seconds_total')[0]?.value ?? 0,
    gcSeconds: new Map(samples('nodejs_gc_duration_seconds_sum').map(({ labels, value }) => [labels.kind!, value] as const)),
    heapUsedBytes: samples('nodejs_heap_size_used_bytes')[0]?.value ?? 0,
  };
  return { byAction, byTable, process, load: loadavg()[0]!, threads: threadSeconds(server.pid) };
}

/** What the maintenance did between two tallies (seconds and passes by action, then by table), and the server process's CPU, GC and heap. */
export function describeTally(before: MaintenanceTally, after: MaintenanceTally): string {
  const gc = [...after.process.gcSeconds].map(([kind, seconds]) => `${kind} ${(seconds - (before.process.gcSeconds.get(kind) ?? 0)).toFixed(2)}`).join(', ');
  const server = `server CPU ${(after.process.cpuSeconds - before.process.cpuSeconds).toFixed(1)} s, GC s ${gc}, heap ${(before.process.heapUsedBytes / 2 ** 20).toFixed(0)}→${(after.process.heapUsedBytes / 2 ** 20).toFixed(0)} MB, load ${before.load.toFixed(1)}→${after.load.toFixed(1)}`;
  const threads = [...after.threads]
    .map(([name, seconds]) => [name, seconds - (before.threads.get(name) ?? 0)] as const)
    .filter(([, seconds]) => seconds >= 0.05)
    .map(([name, seconds]) => `${name} ${seconds.toFixed(1)}`)
    .join(', ');
  return `${maintenanceDone(before, after)}; ${server}${threads ? `; CPU s by thread: ${threads}` : ''}`;
}

/** The maintenance passes between two tallies. */
function maintenanceDone(before: MaintenanceTally, after: MaintenanceTally): string {
  const actions = [...after.byAction].map(([action, { seconds, passes }]) => ({ action, seconds: seconds - (before.byAction.get(action)?.seconds ?? 0), passes: passes - (before.byAction.get(action)?.passes ?? 0) })).filter((a) => a.passes > 0);
  if (actions.length === 0) return 'no pass';
  const tables = [...after.byTable].map(([key, n]) => [key, n - (before.byTable.get(key) ?? 0)] as const).filter(([, n]) => n > 0);
  const total = actions.reduce((sum, a) => sum + a.seconds, 0);
  return `${total.toFixed(2)} s (${actions.map((a) => `${a.action} ${a.seconds.toFixed(2)} s in ${a.passes}`).join(', ')}; ${tables.map(([key, n]) => `${key} ×${n}`).join(', ')})`;
}

/**
 * PGlite: waits until the embedded store's maintenance has analyzed `users` since the seed
 * began (a pass counted in `/metrics`) and then made no pass for 12 s (more than two of its
 * intervals: nothing is due any more). Polled every second.
 */
export async function pgliteSettling(server: ServerHandle): Promise<(since: number) => Promise<boolean>> {
  const passes = 'wum_embedded_maintenance_passes_total';
  const before = await counted(server, passes, 'users');
  return async (since) => {
    let last = await counted(server, passes);
    let quietSince = Date.now();
    while (Date.now() - since < SETTLE_TIMEOUT_MS) {
      const now = await counted(server, passes);
      if (now !== last) [last, quietSince] = [now, Date.now()];
      if ((await counted(server, passes, 'users')) > before && Date.now() - quietSince >= 12_000) return true;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    return false;
  };
}

/** PostgreSQL: waits until autovacuum (or anyone) analyzed `users` after the seed ended (polled every second). */
export function postgresSettling(query: (text: string) => Promise<Array<Record<string, unknown>>>) {
  return async (): Promise<(since: number) => Promise<boolean>> => async (since) => {
    while (Date.now() - since < SETTLE_TIMEOUT_MS) {
      const [row] = await query(
        "select extract(epoch from greatest(last_analyze, last_autoanalyze)) * 1000 as at from pg_stat_user_tables where relname = 'users'",
      );
      if (Number(row?.at ?? 0) > since) return true;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    return false;
  };
}
