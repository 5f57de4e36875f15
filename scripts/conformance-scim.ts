/*
 * `npm run conformance:scim`: replays Okta's SPEC and CRUD tests and Microsoft's SCIM
 * reference collection (read from the folder scim-conformance/run.ts names) against wum, and prints per
 * suite the steps, how many passed, how many ran adapted (each adaptation is listed with its
 * step and reason) and how many failed. Exits non-zero on any failure.
 *
 *   npm run conformance:scim                     # starts wum as `npm start` does, on PGlite and on PostgreSQL
 *   npm run conformance:scim -- --backend pglite # one backend
 *   npm run conformance:scim -- --url http://localhost:3000 --admin-token <ADMIN_TOKEN>
 *                                                # a running server (admin API on; BASE_DOMAIN via --base-domain)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { freePort } from '../harness/free-port.ts';
import { SERVER_ARGS, sendRequest, spawnServer } from '../harness/server-process.ts';
import { countsOf, formatReport, type SuiteResult } from './scim-conformance/report.ts';
import { DEFAULT_SUITES_DIR, runScimConformance } from './scim-conformance/run.ts';
import type { ServerTarget } from './scim-conformance/target.ts';
import { buildBundles } from './build-bundles.ts';

// The server runs as `npm start` runs it: bundled, once the bundle is current.
await buildBundles({ ifStale: true });

const { values: options } = parseArgs({
  options: {
    url: { type: 'string' },
    'admin-token': { type: 'string' },
    'base-domain': { type: 'string' },
    backend: { type: 'string', default: 'both' },
    suites: { type: 'string', default: DEFAULT_SUITES_DIR },
  },
});

/** Starts the server as `npm start` runs it and waits for /healthz. */
async function startServer(storage: Record<string, string>): Promise<{ target: ServerTarget; stop: () => Promise<void> }> {
  const port = await freePort();
  const adminToken = randomBytes(24).toString('hex');
  const server = spawnServer(process.execPath, SERVER_ARGS, {
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: 'warn',
    SEED_DEMO: 'false',
    ...storage,
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const up = await sendRequest(port, 'GET', '/healthz', { timeoutMs: 1000 }).then((r) => r.status === 200, () => false);
    if (up) break;
    if (Date.now() > deadline || server.child.exitCode !== null) {
      server.kill();
      throw new Error(`wum did not start:\n${server.stdout().slice(-2000)}\n${server.stderr().slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    target: { url: `http://localhost:${port}`, adminToken, baseDomain: 'localhost' },
    stop: async () => {
      server.child.kill('SIGTERM');
      await server.waitForExit(15_000).catch(() => server.kill());
    },
  };
}

async function runOn(label: string, storage: () => Promise<{ env: Record<string, string>; cleanUp: () => void }>): Promise<SuiteResult[]> {
  const { env, cleanUp } = await storage();
  try {
    const server = await startServer(env);
    try {
      const results = await runScimConformance(server.target, options.suites);
      process.stdout.write(`${formatReport(label, results)}\n`);
      return results;
    } finally {
      await server.stop();
    }
  } finally {
    cleanUp();
  }
}

const all: SuiteResult[] = [];
if (options.url) {
  const adminToken = options['admin-token'] ?? process.env.ADMIN_TOKEN;
  if (!adminToken) throw new Error('--url needs --admin-token (or ADMIN_TOKEN): the runner makes its workspaces through the admin API');
  const target = { url: options.url.replace(/\/$/, ''), adminToken, baseDomain: options['base-domain'] ?? new URL(options.url).hostname };
  const results = await runScimConformance(target, options.suites);
  process.stdout.write(`${formatReport(options.url, results)}\n`);
  all.push(...results);
} else {
  const backends = options.backend === 'both' ? ['pglite', 'postgres'] : [options.backend];
  for (const backend of backends) {
    if (backend === 'pglite') {
      all.push(
        ...(await runOn('PGlite', async () => {
          const dir = mkdtempSync(join(tmpdir(), 'wum-scim-conformance-'));
          return { env: { DATA_DIR: join(dir, 'data') }, cleanUp: () => rmSync(dir, { recursive: true, force: true }) };
        })),
      );
    } else if (backend === 'postgres') {
      all.push(
        ...(await runOn('PostgreSQL', async () => {
          const cluster = await startPostgresCluster();
          if (!cluster) throw new Error('PostgreSQL server binaries are not installed: run with --backend pglite');
          return { env: { DATABASE_URL: cluster.url }, cleanUp: () => cluster.stop() };
        })),
      );
    } else {
      throw new Error(`--backend must be pglite, postgres or both, not ${backend}`);
    }
  }
}
const failed = all.reduce((n, r) => n + countsOf(r).failed, 0);
process.stdout.write(failed > 0 ? `\n${failed} step(s) failed\n` : '\nevery step passed\n');
process.exit(failed > 0 ? 1 : 0);
