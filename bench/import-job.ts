/*
 * `npm run bench:import`: a bulk import job of 100,000 new users (`--users N`) on a spawned
 * server, on embedded PGlite and then on PostgreSQL (a throw-away cluster; `--backend pglite` or
 * `--backend postgres` for one): the upload's and the job's time, users per second, and the p99
 * of `GET /users` while idle against during the job, with their ratio, and idle again after the job
 * (the workspace then 100,000 users larger, for what its growth alone does). Goals (docs/performance.md):
 * 100,000 users in ≤ 60 s on PostgreSQL and ≤ 120 s on PGlite, p99 during ≤ 2× idle. The load
 * average is printed before and after; a run that starts on a busy machine marks its ratio and
 * verdicts (bench/machine-load.ts). With `--backend B --json FILE`, the figures are also written to
 * FILE as {@link ImportFigures}, which `npm run bench` reads.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createAdminClient, createClient, type WumClient } from '../sdk/index.ts';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { buildBundles } from '../scripts/build-bundles.ts';
import { IMPORT_BACKEND_LABEL, IMPORT_GOAL_SECONDS as GOAL_SECONDS, IMPORT_GOAL_USERS, type ImportFigures } from './import-figures.ts';
import { watchMachineLoad } from './machine-load.ts';

const { values } = parseArgs({ options: { users: { type: 'string', default: '100000' }, backend: { type: 'string' }, json: { type: 'string' } } });
const USERS = Number(values.users);

if (!values.backend) {
  // One process per backend: the harness reads the backend when it is loaded.
  for (const backend of ['pglite', 'postgres']) {
    const run = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--users', String(USERS), '--backend', backend], { stdio: 'inherit' });
    if (run.status !== 0) process.exitCode = run.status ?? 1;
  }
} else {
  await measure(values.backend as 'pglite' | 'postgres');
}

/** Times `GET /users` (first page) from two callers until `until` resolves; the p99 in ms. */
async function listingP99(wum: WumClient, until: Promise<unknown>): Promise<{ p99: number; samples: number }> {
  const samples: number[] = [];
  let done = false;
  void until.finally(() => (done = true));
  const caller = async () => {
    while (!done) {
      const started = performance.now();
      await wum.users.list({ page_size: 30 });
      samples.push(performance.now() - started);
    }
  };
  await Promise.all([caller(), caller()]);
  samples.sort((a, b) => a - b);
  return { p99: samples[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))] ?? NaN, samples: samples.length };
}

async function measure(backend: 'pglite' | 'postgres'): Promise<void> {
  const load = watchMachineLoad();
  const cluster = backend === 'postgres' ? await startPostgresCluster() : undefined;
  if (backend === 'postgres' && !cluster) throw new Error('PostgreSQL needs its server binaries');
  if (cluster) {
    process.env.WUM_TEST_BACKEND = 'postgres';
    process.env.TEST_DATABASE_URL = cluster.url;
  }
  // The server runs the bundle, as `npm start` does: rebuilt first when the sources changed.
  await buildBundles({ ifStale: true });
  const { startWumServer } = await import('../harness/wum-server.ts');
  const server = await startWumServer({ RATE_LIMIT_PER_KEY: '0', SHED_EVENT_LOOP_DELAY_MS: '0', LOG_LEVEL: 'warn', REQUEST_TIMEOUT_MS: '600000' });
  try {
    const admin = createAdminClient({ baseUrl: server.adminUrl, adminToken: server.adminToken });
    await admin.products.put('crm', ['admin', 'member']);
    const { api_key: key } = await admin.workspaces.create({ subdomain: 'bulk' });
    await admin.close();
    const wum = createClient({ baseUrl: server.workspaceUrl('bulk'), apiKey: key.key, timeoutMs: 600_000 });
    // A first page to list, as a customer's existing users would be.
    for (let i = 0; i < 30; i += 1) await wum.users.add({ email: `seed${i}@bulk.example`, role: 'non_owner', apps: [] });
    const idle = await listingP99(wum, new Promise((resolve) => setTimeout(resolve, 5_000)));

    const csv = ['email,role,first_name,last_name,apps', ...Array.from({ length: USERS }, (_, i) => `user${i}@bulk.example,non_owner,First${i},Last${i},crm:member`)].join('\n');
    const started = performance.now();
    const job = await wum.users.imports.create(csv);
    const uploaded = (performance.now() - started) / 1000;
    const finished = (async () => {
      for (;;) {
        const now = await wum.users.imports.get(job.id);
        if (now.status !== 'queued' && now.status !== 'running') return now;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const during = await listingP99(wum, finished);
    const end = await finished;
    const seconds = (performance.now() - started) / 1000;
    // Idle again, on the workspace as the job left it: what its growth alone does to the p99
    // (shown beside; the goal stays against the idle figure before the job).
    const idleAfter = await listingP99(wum, new Promise((resolve) => setTimeout(resolve, 5_000)));
    await wum.close();

    const ratio = during.p99 / idle.p99;
    if (values.json) {
      const figures: ImportFigures = { backend, users: USERS, status: end.status, added: end.added, seconds, uploadSeconds: uploaded, idleP99Ms: idle.p99, duringP99Ms: during.p99 };
      writeFileSync(values.json, JSON.stringify(figures, null, 2));
    }
    process.stdout.write(
      [
        `import job of ${USERS} users on ${IMPORT_BACKEND_LABEL[backend]}; ${cpus().length} cores; ${load.summary()}`,
        `| measure | value | goal | verdict |`,
        `| --- | ---: | ---: | --- |`,
        `| job ${end.status}: ${end.added} added | ${seconds.toFixed(1)} s (upload ${uploaded.toFixed(1)} s) | ≤ ${GOAL_SECONDS[backend]} s at ${IMPORT_GOAL_USERS} | ${USERS === IMPORT_GOAL_USERS ? load.verdict(seconds <= GOAL_SECONDS[backend]) : 'smaller run'} |`,
        `| users/s | ${(USERS / seconds).toFixed(0)} | ≥ ${(IMPORT_GOAL_USERS / GOAL_SECONDS[backend]).toFixed(0)} | |`,
        `| GET /users p99 idle / during | ${idle.p99.toFixed(1)} ms / ${during.p99.toFixed(1)} ms (${idle.samples} / ${during.samples} requests) | | |`,
        `| p99 during ÷ idle | ${load.ratio(ratio)} | ≤ 2× | ${load.verdict(ratio <= 2)} |`,
        `| GET /users p99 idle after the job, ${end.added} users more | ${idleAfter.p99.toFixed(1)} ms (${idleAfter.samples} requests): during ÷ idle after ${load.ratio(during.p99 / idleAfter.p99)} | | |`,
        '',
      ].join('\n'),
    );
  } finally {
    await server.stop();
    cluster?.stop();
  }
}
