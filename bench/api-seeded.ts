/*
 * Users seeded as users arrive: through `POST /users` (10 in flight, as `wum users import`
 * sends them: one request per row), then page 1 and an add measured at once ("fresh": tables
 * never analyzed) and again once the store has settled ("settled": after autovacuum on
 * PostgreSQL, after the embedded store's own maintenance on PGlite, has analyzed `users`).
 * On PGlite also the data directory's growth under a steady add/deactivate/reactivate load.
 * Every other row of the benchmark keeps its set-based seed (bench/seed.ts) for large sizes.
 * `npm run bench:api-seeded [-- --quick]` runs this alone; `npm run bench` runs it too.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
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
  /** Workspace sizes, each added through the API into its own workspace. */
  readonly sizes: readonly number[];
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
async function sendAll(port: number, count: number, next: (i: number) => HttpRequestSpec, progress?: (sent: number, perSecond: number) => void): Promise<number> {
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
async function createWorkspace(port: number, subdomain: string): Promise<SeededWorkspace> {
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

/**
 * For each size: a new workspace, that many users added through the API, then page 1 and
 * `POST /users` measured fresh, the wait until `users` was analyzed, and both measured again
 * (settled). The fresh rows are compared to the settled ones (goal ≥ 0.8×); each settled page
 * 1 to the smallest size's (goal ≥ 0.8×: a page's cost does not grow with the workspace).
 */
export async function measureApiSeeded(options: ApiSeededOptions): Promise<ReportSection> {
  const { backend, log } = options;
  const server = await options.start();
  const rows: ReportRow[] = [];
  const load = async (next: () => HttpRequestSpec) => {
    await runHttpLoad({ port: server.port, connections: options.connections, seconds: options.warmupSeconds, next });
    return runHttpLoad({ port: server.port, connections: options.connections, seconds: options.seconds, next });
  };
  try {
    let smallestSettled: { size: number; perSecond: number } | undefined;
    for (const size of options.sizes) {
      const ws = await createWorkspace(server.port, `api${size}`);
      const waitSettled = await options.settling(server);
      const addRate = await sendAll(server.port, size, () => addRequest(ws), (sent, rate) => log(`${backend}: ${sent} of ${size} added (${rate.toFixed(0)}/s)`));
      const seededAt = Date.now();
      log(`${backend}: ${size} users added through the API at ${addRate.toFixed(0)}/s`);
      const seed = `${size} users added through the API`;
      const freshPage = await load(() => listRequest(ws, 1));
      const freshAdd = await load(() => addRequest(ws));
      const settled = await waitSettled(seededAt);
      log(`${backend}: users ${settled ? 'analyzed' : 'NOT analyzed'} ${((Date.now() - seededAt) / 1000).toFixed(0)} s after the seed ended`);
      const settledPage = await load(() => listRequest(ws, 1));
      const settledAdd = await load(() => addRequest(ws));
      const against = (label: string, perSecond: number, text: string, minimum: number) => (row: ReportRow): ReportRow => {
        const withBase = { ...row, baseline: { label, perSecond } };
        return { ...withBase, target: { text, met: (ratio(withBase) ?? 0) >= minimum && row.measured!.errors === 0 } };
      };
      const settledNote = settled ? undefined : `users not analyzed within ${SETTLE_TIMEOUT_MS / 1000} s`;
      rows.push(
        { scenario: `${backend} seed: POST /users × ${size}, ${SEED_CONCURRENCY} in flight`, note: `${addRate.toFixed(0)} users/s` },
        against('settled', settledPage.perSecond, '≥ 0.8×', 0.8)({ scenario: `${backend} GET /users page 1, ${seed}, fresh`, measured: freshPage }),
        ((row: ReportRow) =>
          smallestSettled ? against(`settled page 1 at ${smallestSettled.size}`, smallestSettled.perSecond, '≥ 0.8×', 0.8)(row) : row)({
          scenario: `${backend} GET /users page 1, ${seed}, settled`,
          measured: settledPage,
          ...(settledNote ? { note: settledNote } : {}),
        }),
        against('settled', settledAdd.perSecond, '≥ 0.8×', 0.8)({ scenario: `${backend} POST /users, ${seed}, fresh`, measured: freshAdd }),
        { scenario: `${backend} POST /users, ${seed}, settled`, measured: settledAdd },
      );
      smallestSettled ??= { size, perSecond: settledPage.perSecond };
    }
    if (options.growth) rows.push(...(await measureGrowth(server.port, options.growth, log)));
  } finally {
    await server.stop();
  }
  return { title: `${backend}, users added through the API (fresh, then settled)`, rows };
}

/**
 * The data directory's size under a steady load of changes (one add, one deactivation, one
 * reactivation, in turn), measured after each block: MB per 100,000 changes per block, which
 * stays flat when dead rows are reclaimed.
 */
async function measureGrowth(port: number, growth: NonNullable<ApiSeededOptions['growth']>, log: (message: string) => void): Promise<ReportRow[]> {
  const ws = await createWorkspace(port, 'churn');
  const added: string[] = [];
  const rows: ReportRow[] = [];
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
  let offset = 0;
  let before = directoryMb(growth.dataDir);
  for (let block = 1; block <= growth.blocks; block += 1) {
    const rate = await sendAll(port, growth.changesPerBlock, (i) => change(offset + i));
    offset += growth.changesPerBlock;
    const size = directoryMb(growth.dataDir);
    const wal = directoryMb(join(growth.dataDir, 'pg_wal'));
    const perHundredThousand = ((size - before) * 100_000) / growth.changesPerBlock;
    log(`PGlite data dir after block ${block}: ${size.toFixed(1)} MB`);
    rows.push({
      scenario: `PGlite DATA_DIR growth, block ${block} of ${growth.changesPerBlock} changes (add, deactivate, reactivate)`,
      note: `${size.toFixed(1)} MB (WAL ${wal.toFixed(0)} MB); ${perHundredThousand.toFixed(1)} MB per 100,000 changes; ${rate.toFixed(0)} changes/s`,
    });
    before = size;
  }
  return rows;
}

/** Sum of a counter's samples in `/metrics` whose labels match `labels`. */
async function counted(server: ServerHandle, name: string, labels: RegExp): Promise<number> {
  const text = (await sendRequest(server.port, 'GET', '/metrics', { host: '127.0.0.1' })).body;
  return [...text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\d+)$`, 'gm'))]
    .filter((m) => labels.test(m[1]!))
    .reduce((n, m) => n + Number(m[2]), 0);
}

/**
 * PGlite: waits until the embedded store's maintenance has analyzed `users` since the seed
 * began (a pass counted in `/metrics`) and then made no pass for 12 s (more than two of its
 * intervals: nothing is due any more). Polled every second.
 */
export async function pgliteSettling(server: ServerHandle): Promise<(since: number) => Promise<boolean>> {
  const passes = 'wum_embedded_maintenance_passes_total';
  const before = await counted(server, passes, /table="users"/);
  return async (since) => {
    let last = await counted(server, passes, /./);
    let quietSince = Date.now();
    while (Date.now() - since < SETTLE_TIMEOUT_MS) {
      const now = await counted(server, passes, /./);
      if (now !== last) [last, quietSince] = [now, Date.now()];
      if ((await counted(server, passes, /table="users"/)) > before && Date.now() - quietSince >= 12_000) return true;
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
