/*
 * `npm run bench:import`: how long `wum users import` takes for a CSV of 10,000 rows (with the
 * bad, active and deactivated rows of harness/bulk-import-fixture.ts), and the same import
 * run again (every row skipped without a request), against a server on a new embedded PGlite
 * DATA_DIR, or on PostgreSQL with `-- --postgres` (a throw-away cluster). The behaviour is
 * asserted by test/cli/import-1k.test.ts on 1,000 rows; this measures the scale.
 *
 * Options: --rows N (default 10000), --postgres.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'csv-stringify/sync';
import { createAdminClient, createClient } from '../sdk/index.ts';
import { bulkImport } from '../harness/bulk-import-fixture.ts';
import { runWum } from '../harness/run-wum.ts';
import { startPostgresCluster } from '../harness/postgres-cluster.ts';
import { buildBundles } from '../scripts/build-bundles.ts';
import { watchMachineLoad } from './machine-load.ts';

const load = watchMachineLoad();

const { values } = parseArgs({ options: { rows: { type: 'string', default: '10000' }, postgres: { type: 'boolean', default: false } } });
const ROWS = Number(values.rows);
const cluster = values.postgres ? await startPostgresCluster() : undefined;
if (values.postgres && !cluster) throw new Error('--postgres needs the PostgreSQL server binaries');
if (cluster) {
  process.env.WUM_TEST_BACKEND = 'postgres';
  process.env.TEST_DATABASE_URL = cluster.url;
}
// Imported after the backend is chosen: the helper reads it when loaded.
// The server and `wum` run the bundles, as `npm start` does: rebuilt first when the sources changed.
await buildBundles({ ifStale: true });
const { startWumServer } = await import('../harness/wum-server.ts');
const server = await startWumServer({ RATE_LIMIT_PER_KEY: '0', SHED_EVENT_LOOP_DELAY_MS: '0', LOG_LEVEL: 'warn' });
const dir = mkdtempSync(join(tmpdir(), 'wum-bench-import-'));
try {
  const admin = createAdminClient({ baseUrl: server.adminUrl, adminToken: server.adminToken });
  await admin.products.put('crm', ['admin', 'member']);
  await admin.products.put('analytics', ['editor', 'viewer']);
  const { api_key: key } = await admin.workspaces.create({ subdomain: 'bulk' });
  await admin.close();
  const env = { WUM_URL: server.workspaceUrl('bulk'), WUM_API_KEY: key.key };
  const wum = createClient({ baseUrl: env.WUM_URL, apiKey: key.key });
  const fixture = bulkImport(ROWS);
  for (const i of fixture.active) await wum.users.add({ email: fixture.rows[i - 1]!.email, role: 'non_owner', apps: [] });
  await wum.users.add({ email: 'keeper@bulk.example', role: 'owner', apps: [] });
  for (const i of fixture.deactivated) {
    await wum.users.add({ email: fixture.rows[i - 1]!.email, role: 'non_owner', apps: [] });
    await wum.users.remove(fixture.rows[i - 1]!.email);
  }
  await wum.close();
  const file = join(dir, 'users.csv');
  writeFileSync(file, stringify([...fixture.rows], { header: true, columns: ['email', 'role', 'first_name', 'last_name', 'apps'] }));

  const lines: string[] = [];
  for (const label of ['first import', 'the same import again (resumed)']) {
    const started = performance.now();
    const run = await runWum(['users', 'import', file, '--json'], env, 1_800_000);
    const seconds = (performance.now() - started) / 1000;
    const summary = (run.json() as { summary: Record<string, number> }).summary;
    lines.push(`| ${label} | ${seconds.toFixed(1)} | ${(ROWS / seconds).toFixed(0)} | ${JSON.stringify(summary)} |`);
  }
  process.stdout.write(
    `wum users import of ${ROWS} rows on ${cluster ? 'PostgreSQL' : 'embedded PGlite'}; ${cpus().length} cores; ${load.summary()}\n\n`,
  );
  process.stdout.write(['| run | seconds | rows/s | summary |', '| --- | --- | --- | --- |', ...lines].join('\n') + '\n');
} finally {
  await server.stop();
  cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}
