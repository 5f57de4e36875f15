/*
 * Users seeded as an operator seeds them: a generated CSV file handed to the real
 * `wum users import` (a new node process, bin/wum.js). The CLI names the workspace by its URL
 * (`http://<subdomain>.localhost:<port>`) and sends every request to 127.0.0.1 with
 * `WUM_CONNECT_TO`, so no name is resolved and the server is addressed by IP as everywhere
 * else in the benchmarks.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'csv-stringify/sync';
import { runWum } from '../harness/run-wum.ts';
import type { SeededWorkspace } from './seed.ts';

/** The columns `wum users import` reads (README, "CLI"). */
const COLUMNS = ['email', 'role', 'first_name', 'last_name', 'apps'];

/** The import of one row may take this long on a loaded machine before the run is given up. */
const MS_PER_ROW = 200;

/**
 * Writes `size` rows like the API seed's adds (a non-owner with crm:member and
 * analytics:viewer) and runs `wum users import` of them into `ws` on the server at
 * 127.0.0.1:`port`, `concurrency` rows at once.
 * @returns users added per second, timed around the CLI process (its start-up included).
 * @throws Error when the CLI exits non-zero or adds fewer users than the file has rows.
 */
export async function importUsers(port: number, ws: SeededWorkspace, size: number, concurrency: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'wum-bench-import-'));
  try {
    const file = join(dir, 'users.csv');
    const rows = Array.from({ length: size }, (_, i) => [`row${i}@${ws.subdomain}.example`, 'non_owner', 'Bench', '', 'crm:member;analytics:viewer']);
    writeFileSync(file, stringify(rows, { header: true, columns: COLUMNS }));
    const env = { WUM_URL: `http://${ws.subdomain}.localhost:${port}`, WUM_API_KEY: ws.apiKey, WUM_CONNECT_TO: '127.0.0.1' };
    const started = performance.now();
    const run = await runWum(['users', 'import', file, '--json', '--concurrency', String(concurrency)], env, Math.max(120_000, size * MS_PER_ROW));
    const seconds = (performance.now() - started) / 1000;
    if (run.code !== 0) throw new Error(`wum users import exited ${run.code}: ${run.stderr.slice(-1000)}`);
    const summary = (run.json() as { summary: { added: number } }).summary;
    if (summary.added !== size) throw new Error(`wum users import added ${summary.added} of ${size} rows: ${JSON.stringify(summary)}`);
    return size / seconds;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
