/*
 * `npm run soak`: the soak test (not part of `npm test`; docs/performance.md). Starts a real wum server
 * on loopback — on a throw-away PostgreSQL cluster when the server binaries are installed,
 * else on embedded PGlite — and sends it a fixed rate of mixed traffic for N minutes with
 * autocannon: listings, look-ups, adds, reactivations and deactivations over a bounded set of
 * emails in several workspaces, some with Idempotency-Key. It samples the server's resident
 * memory from its own /metrics, prints RSS over time and the status codes seen, and exits
 * non-zero on any 5xx, any transport error, or RSS that keeps growing.
 *
 *   npm run soak                          # 10 minutes, 200 requests/s, PostgreSQL if available
 *   npm run soak -- --minutes 2 --rate 300 --backend pglite
 *
 * Options (or the variables in brackets): --minutes [SOAK_MINUTES] (10), --rate [SOAK_RATE]
 * requests per second (200), --connections [SOAK_CONNECTIONS] (50), --backend
 * [SOAK_BACKEND] postgres | pglite (postgres when initdb is on PATH), --sample-seconds
 * [SOAK_SAMPLE_SECONDS] (10). Everything listens on 127.0.0.1 only.
 */
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import type { CreatedWorkspace } from 'wum/sdk';
import { freePort } from '../harness/free-port.ts';
import { startPostgresCluster, withClient, type PostgresCluster } from '../harness/postgres-cluster.ts';
import { SERVER_ARGS, sendRequest, spawnServer, type ServerProcess } from '../harness/server-process.ts';
import { buildBundles } from '../scripts/build-bundles.ts';
import { watchMachineLoad } from './machine-load.ts';

// The server runs as `npm start` runs it: bundled, once the bundle is current.
// Read before building, which loads the machine itself.
const load = watchMachineLoad();
await buildBundles({ ifStale: true });

const ADMIN_TOKEN = 'soak-admin-token-0123456789';
const API = '/api/external/v2';
/** Workspaces the load is spread over: the per-key rate limit (100/s) stays on and is not hit. */
const WORKSPACES = 4;
/** Emails per workspace: adds and removals cycle over them, so the users table stays bounded. */
const EMAILS_PER_WORKSPACE = 500;
/** RSS growth from the end of the first quarter to the end, above which memory is not flat. */
const FLAT_TOLERANCE = { ratio: 0.15, bytes: 48 * 1024 * 1024 };

const { values: options } = parseArgs({
  options: {
    minutes: { type: 'string', default: process.env.SOAK_MINUTES ?? '10' },
    rate: { type: 'string', default: process.env.SOAK_RATE ?? '200' },
    connections: { type: 'string', default: process.env.SOAK_CONNECTIONS ?? '50' },
    backend: { type: 'string', default: process.env.SOAK_BACKEND },
    'sample-seconds': { type: 'string', default: process.env.SOAK_SAMPLE_SECONDS ?? '10' },
  },
});
const minutes = Number(options.minutes);
const rate = Number(options.rate);
const connections = Number(options.connections);
const sampleSeconds = Number(options['sample-seconds']);
for (const [name, value] of Object.entries({ minutes, rate, connections, sampleSeconds })) {
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
}

interface Workspace {
  readonly host: string;
  readonly key: string;
}

/** One request of the mix: mostly reads, and every kind of change. */
function nextRequest(workspaces: readonly Workspace[]): autocannon.Request & { method: 'GET' | 'POST' | 'DELETE' } {
  const ws = workspaces[randomInt(workspaces.length)]!;
  const headers: Record<string, string> = { host: ws.host, 'x-api-key': ws.key };
  const email = `soak${randomInt(EMAILS_PER_WORKSPACE)}@example.com`;
  const roll = randomInt(100);
  if (roll < 35) return { method: 'GET', path: `${API}/users?page_size=${[10, 30, 100][randomInt(3)]}&status=${['active', 'all'][randomInt(2)]}`, headers };
  if (roll < 55) return { method: 'GET', path: `${API}/users/${encodeURIComponent(email)}`, headers };
  if (roll < 60) return { method: 'GET', path: `${API}/products`, headers };
  if (roll < 82) {
    if (randomInt(4) === 0) headers['idempotency-key'] = `soak-${randomInt(1_000_000)}`;
    const apps = [[{ name: 'crm', role: 'member' }], [{ name: 'analytics', role: 'viewer' }, { name: 'crm', role: 'admin' }], []][randomInt(3)];
    const body = JSON.stringify({ user: { email, role: 'non_owner', first_name: `Soak${randomInt(1000)}`, apps } });
    return { method: 'POST', path: `${API}/users`, headers: { ...headers, 'content-type': 'application/json' }, body };
  }
  return { method: 'DELETE', path: `${API}/users/${encodeURIComponent(email)}`, headers };
}

/** The server's resident set size, from its own Prometheus metrics. */
async function residentBytes(port: number): Promise<number> {
  const res = await sendRequest(port, 'GET', '/metrics');
  const match = /^process_resident_memory_bytes (\d+(?:\.\d+)?(?:e\+\d+)?)$/m.exec(res.body);
  if (!match) throw new Error('no process_resident_memory_bytes in /metrics');
  return Number(match[1]);
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Least-squares slope of `ys` over `xs`. */
function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function main(): Promise<number> {
  let cluster: PostgresCluster | undefined;
  let dataDir: string | undefined;
  let server: ServerProcess | undefined;
  const backend = options.backend ?? 'postgres';
  try {
    const env: Record<string, string> = { HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'warn', SEED_DEMO: 'false' };
    if (backend === 'postgres') {
      cluster = await startPostgresCluster();
      if (!cluster) throw new Error('PostgreSQL server binaries (initdb, pg_ctl) are not installed: use --backend pglite');
      await withClient(cluster.url, (client) => client.query('create database wum_soak'));
      env.DATABASE_URL = cluster.url.replace(/\/postgres$/, '/wum_soak');
    } else if (backend === 'pglite') {
      dataDir = mkdtempSync(join(tmpdir(), 'wum-soak-'));
      env.DATA_DIR = join(dataDir, 'data');
    } else {
      throw new Error(`--backend must be postgres or pglite, not ${backend}`);
    }
    const port = await freePort();
    server = spawnServer(process.execPath, SERVER_ARGS, { ...env, PORT: String(port) });
    await server.waitForOutput(/"pid":\d+/, 120_000).catch(() => undefined);
    for (let waited = 0; ; waited += 250) {
      const ok = await sendRequest(port, 'GET', '/readyz', { timeoutMs: 1000 }).then((r) => r.status === 200, () => false);
      if (ok) break;
      if (waited > 120_000) throw new Error(`the server did not become ready${server.stderr().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }

    const admin = (method: string, path: string, body?: unknown) =>
      sendRequest(port, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });
    for (const [name, roles] of [['analytics', ['editor', 'viewer']], ['crm', ['admin', 'member']]] as const) {
      await admin('PUT', `/products/${name}`, { roles });
    }
    const workspaces: Workspace[] = [];
    for (let i = 0; i < WORKSPACES; i++) {
      const created = await admin('POST', '/workspaces', { subdomain: `soak${i}` });
      if (created.status !== 201) throw new Error(`workspace: ${created.status} ${created.body}`);
      workspaces.push({ host: `soak${i}.localhost:${port}`, key: (created.json() as CreatedWorkspace).api_key.key });
    }

    const started = Date.now();
    const samples: Array<{ seconds: number; rss: number }> = [{ seconds: 0, rss: await residentBytes(port) }];
    process.stdout.write(
      `soak: ${minutes} min at ${rate} requests/s over ${connections} connections, ${backend}, server pid ${server.child.pid}\n` +
        `  elapsed      RSS\n  ${'0 s'.padStart(7)} ${mb(samples[0]!.rss).padStart(8)} MB\n`,
    );
    const sampler = setInterval(() => {
      residentBytes(port).then(
        (rss) => {
          const seconds = Math.round((Date.now() - started) / 1000);
          samples.push({ seconds, rss });
          process.stdout.write(`  ${`${seconds} s`.padStart(7)} ${mb(rss).padStart(8)} MB\n`);
        },
        (error: Error) => process.stdout.write(`  RSS sample failed: ${error.message}\n`),
      );
    }, sampleSeconds * 1000);

    const result = await autocannon({
      url: `http://127.0.0.1:${port}`,
      connections,
      overallRate: rate,
      duration: minutes * 60,
      timeout: 10,
      requests: [{ setupRequest: (request) => ({ ...request, ...nextRequest(workspaces) }) }],
    });
    clearInterval(sampler);
    samples.push({ seconds: Math.round((Date.now() - started) / 1000), rss: await residentBytes(port) });

    const statuses = Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [Number(code), Number(s.count)] as const);
    const fiveXx = statuses.filter(([code]) => code >= 500).reduce((n, [, c]) => n + c, 0);
    const transportErrors = result.errors + result.timeouts;
    const settled = samples.filter((s) => s.seconds >= (minutes * 60) / 4);
    const base = settled[0]?.rss ?? samples[0]!.rss;
    const end = samples.at(-1)!.rss;
    const growth = end - base;
    const flat = growth <= Math.max(base * FLAT_TOLERANCE.ratio, FLAT_TOLERANCE.bytes);
    const perMinute = slope(settled.map((s) => s.seconds / 60), settled.map((s) => s.rss));

    process.stdout.write(
      [
        '',
        `requests: ${result.requests.total} in ${result.duration.toFixed(0)} s (${result.requests.average.toFixed(1)}/s average, target ${rate}/s)`,
        `latency: p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms`,
        `status codes: ${statuses.map(([code, count]) => `${code} × ${count}`).join(', ')}`,
        `5xx: ${fiveXx}; transport errors: ${result.errors}, timeouts: ${result.timeouts}`,
        `RSS: start ${mb(samples[0]!.rss)} MB, after the first quarter ${mb(base)} MB, end ${mb(end)} MB, ` +
          `max ${mb(Math.max(...samples.map((s) => s.rss)))} MB; trend after the first quarter ${mb(perMinute)} MB/min → ${flat ? 'flat' : 'GROWING'}`,
        '',
      ].join('\n'),
    );
    if (result.requests.average < rate * 0.9) {
      process.stdout.write(`note: the client fell short of the target rate (latency × connections < 1 s); raise --connections\n`);
    }
    const ok = fiveXx === 0 && transportErrors === 0 && flat;
    process.stdout.write(`${load.summary()}\n${ok ? 'soak passed' : 'soak FAILED'}\n`);
    return ok ? 0 : 1;
  } finally {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.waitForExit(20_000).catch(() => server?.kill());
    }
    cluster?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
