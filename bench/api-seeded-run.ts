/*
 * `npm run bench:api-seeded [-- --quick] [-- --sizes 1000,10000] [-- --changes N]
 * [-- --seeds api,import] [-- --backend pglite|postgres]`: the rows of bench/api-seeded.ts
 * alone, on a throw-away PostgreSQL cluster and on a new embedded PGlite DATA_DIR, each server
 * started from the compiled service as `npm run bench` starts it. `--changes 0`: no growth rows;
 * `--skip-build`: use dist/ as built.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../harness/free-port.ts';
import { startPostgresCluster, withClient } from '../harness/postgres-cluster.ts';
import { BENCH_ADMIN_TOKEN, measureApiSeeded, pgliteMaintenanceTally, pgliteSettling, postgresSettling, SEED_WORDS, SEEDS, type Seed } from './api-seeded.ts';
import { watchMachineLoad } from './machine-load.ts';
import { buildService, SERVER_SCRIPT, startServer, type ServerHandle } from './processes.ts';
import { renderReport, type ReportSection } from './report.ts';

const load = watchMachineLoad();
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    sizes: { type: 'string' },
    changes: { type: 'string' },
    backend: { type: 'string' },
    seeds: { type: 'string' },
    'skip-build': { type: 'boolean', default: false },
  },
});
const sizes = (args.sizes ?? (args.quick ? '300,3000' : '1000,10000')).split(',').map(Number);
const changes = Number(args.changes ?? (args.quick ? 3_000 : 30_000));
const seeds = (args.seeds ?? SEEDS.join(',')).split(',') as Seed[];
if (seeds.some((seed) => !SEEDS.includes(seed))) throw new Error(`--seeds takes ${SEEDS.join(',')} or one of them, not ${args.seeds}`);
const seconds = args.quick ? 3 : 10;
const started = performance.now();
const log = (message: string) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
const env = (extra: Record<string, string>) => ({ RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'warn', ADMIN_TOKEN: BENCH_ADMIN_TOKEN, SEED_DEMO: 'false', ...extra });

// --skip-build: dist/ as it is, e.g. while another benchmark of this checkout starts servers from it.
if (!args['skip-build']) buildService();
const scratch = mkdtempSync(join(tmpdir(), 'wum-bench-api-'));
const servers: ServerHandle[] = [];
const start = async (extra: Record<string, string>) => {
  const server = await startServer(SERVER_SCRIPT, env(extra), await freePort(), { nodeArgs: ['--max-old-space-size=128'] });
  servers.push(server);
  return server;
};
const common = { sizes, seeds, connections: 10, warmupSeconds: 1, seconds, log };
const sections: ReportSection[] = [];
const cluster = args.backend === 'pglite' ? undefined : await startPostgresCluster();
try {
  if (cluster) {
    await withClient(cluster.url, (client) => client.query('create database wum_api_seeded'));
    const url = cluster.url.replace(/\/postgres$/, '/wum_api_seeded');
    const query = (text: string) => withClient(url, async (client) => (await client.query(text)).rows as Array<Record<string, unknown>>);
    sections.push(await measureApiSeeded({ ...common, backend: 'PostgreSQL', start: () => start({ DATABASE_URL: url }), settling: postgresSettling(query) }));
  }
  if (args.backend !== 'postgres') {
    const dataDir = join(scratch, 'pglite');
    sections.push(
      await measureApiSeeded({
        ...common,
        backend: 'PGlite',
        start: () => start({ DATA_DIR: dataDir }),
        settling: pgliteSettling,
        maintenance: pgliteMaintenanceTally,
        ...(changes > 0 ? { growth: { dataDir, changesPerBlock: Math.round(changes / 3), blocks: 3 } } : {}),
      }),
    );
  }
  const header = `users ${seeds.map((seed) => SEED_WORDS[seed]).join(' and ')}${args.quick ? ' (--quick)' : ''}: ${cpus().length} cores; 10 connections, 1 s warm-up, ${seconds} s measured; run took ${((performance.now() - started) / 60_000).toFixed(1)} min`;
  process.stdout.write(`\n${header}\n\n${renderReport(sections, load)}\n`);
} finally {
  for (const server of servers) await server.stop().catch(() => {});
  cluster?.stop();
  rmSync(scratch, { recursive: true, force: true });
}
