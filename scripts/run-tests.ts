/*
 * `npm test`: runs every test file with Node's test runner, once on embedded PGlite and once
 * on a real PostgreSQL (TEST_DATABASE_URL, or a throw-away cluster started here), then prints
 * how many tests ran on each backend. Exits non-zero if anything failed.
 *
 * Before the suites it migrates one database per backend, which the tests copy instead of
 * migrating their own: a tar of a migrated PGlite data directory (WUM_TEST_PGLITE_TEMPLATE),
 * and a migrated PostgreSQL database that `CREATE DATABASE … TEMPLATE` copies
 * (WUM_TEST_PG_TEMPLATE); and it bundles the server and the CLI (scripts/build-bundles.ts), which
 * the tests' server and `wum` processes run, as `npm start` does. The two suites then run at the
 * same time, each with half the machine's cores as test processes in flight (at least 1), each
 * process running a group of up to ten test files one after the other (`groupFiles`, below);
 * the PGlite suite's output is shown as it
 * comes, the PostgreSQL suite's after it, so the output reads as if they ran one after the
 * other. WUM_TEST_TIMINGS=1 prints each file's duration after the suites (docs/performance.md,
 * "npm test").
 *
 * A file marked `// database-free` (scripts/database-free.ts) opens no database: it runs once,
 * in a third suite beside the two, which cannot load a database driver (a marked file that
 * opens a database fails there). A file marked `// one backend: pglite` or `… postgres`
 * (scripts/test-backends.ts) runs in that backend's suite only.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openDatabase } from '../src/storage/database.ts';
import { buildBundles } from './build-bundles.ts';
import { runStaticChecks } from './static-checks.ts';
import { databaseFreeNodeOptions, isDatabaseFree } from './database-free.ts';
import { oneBackendOf } from './test-backends.ts';
import {
  startPostgresCluster,
  TEST_PG_TEMPLATE_VARIABLE,
  withClient,
  type PostgresCluster,
} from '../harness/postgres-cluster.ts';
import { TEST_PGLITE_TEMPLATE_VARIABLE } from '../harness/backend.ts';

interface Tally {
  backend: string;
  tests: number;
  passed: number;
  /** Tests that said why they cannot run here (a suite needing files a plain clone lacks). */
  skipped: number;
  failed: number;
  exitCode: number;
}

const files = readdirSync('test', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => join('test', f))
  .sort();
const only = process.argv.slice(2);
const selected = only.length > 0 ? files.filter((f) => only.some((o) => f.includes(o))) : files;
const databaseFree = selected.filter(isDatabaseFree);
const perBackend = selected.filter((f) => !databaseFree.includes(f));
const backendOf = new Map(perBackend.map((f) => [f, oneBackendOf(f)]));
const pgliteFiles = perBackend.filter((f) => backendOf.get(f) !== 'postgres');
const postgresFiles = perBackend.filter((f) => backendOf.get(f) !== 'pglite');
const reportDir = mkdtempSync(join(tmpdir(), 'wum-test-report-'));
// Both suites run at once, together with as many test processes in flight as the machine has
// cores: the run is CPU-bound, so more only adds contention and makes a loaded machine time out
// the tests that start servers and CLI processes. WUM_TEST_CONCURRENCY sets it per suite.
const concurrency = Number(process.env.WUM_TEST_CONCURRENCY) || Math.max(1, Math.floor(availableParallelism() / 2));

// Test files per process (WUM_TEST_GROUP_SIZE; 1 for a process per file). Each file is still
// its own module, with its own database and app; what the files of a group share is the one
// Node process, which loads the TypeScript loader, the service's modules and their
// dependencies once instead of once per file (about 1.5 s of CPU each, docs/performance.md,
// "npm test").
const groupSize = Number(process.env.WUM_TEST_GROUP_SIZE) || 10;

/** `suiteFiles` as entry modules of up to `groupSize` files each (in `reportDir`), in order. */
function groupFiles(suite: string, suiteFiles: readonly string[]): string[] {
  if (groupSize <= 1) return [...suiteFiles];
  const groups: string[] = [];
  for (let i = 0; i < suiteFiles.length; i += groupSize) {
    const group = join(reportDir, `${suite}-${groups.length + 1}.test.mjs`);
    const imports = suiteFiles.slice(i, i + groupSize).map((f) => `import ${JSON.stringify(pathToFileURL(resolve(f)).href)};\n`);
    writeFileSync(group, imports.join(''));
    groups.push(group);
  }
  return groups;
}

function count(tap: string, name: string): number {
  const match = new RegExp(`^# ${name} (\\d+)$`, 'm').exec(tap);
  return match ? Number(match[1]) : 0;
}

/**
 * Runs `suiteFiles` on one backend (or, as `database-free`, on none); its spec output goes to
 * stdout (`live`) or to a file printed by the caller. Resolves with the tally read from the TAP report.
 */
async function runSuite(backend: string, suiteFiles: readonly string[], env: NodeJS.ProcessEnv, live: boolean): Promise<Tally & { output?: string }> {
  const tapFile = join(reportDir, `${backend}.tap`);
  const outputFile = join(reportDir, `${backend}.out`);
  const header = `\n== ${backend}: ${suiteFiles.length} test files ==\n`;
  if (live) process.stdout.write(header);
  const out = live ? 'inherit' : openSync(outputFile, 'w');
  const child = spawn(
    process.execPath,
    [
      '--import', 'tsx',
      '--test',
      `--test-concurrency=${concurrency}`,
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tapFile}`,
      ...groupFiles(backend, suiteFiles),
    ],
    { stdio: ['ignore', out, live ? 'inherit' : out], env: { ...process.env, ...env, WUM_TEST_BACKEND: backend } },
  );
  const exitCode = await new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? 1)));
  if (typeof out === 'number') closeSync(out);
  let tap = '';
  try {
    tap = readFileSync(tapFile, 'utf8');
  } catch {
    // No report means the runner itself failed; the exit code says so.
  }
  return {
    backend,
    tests: count(tap, 'tests'),
    passed: count(tap, 'pass'),
    skipped: count(tap, 'skipped'),
    failed: count(tap, 'fail') + count(tap, 'cancelled'),
    exitCode,
    ...(live ? {} : { output: header + readFileSync(outputFile, 'utf8') }),
  };
}

/** A migrated PGlite data directory, as a tar for PGlite's `loadDataDir`; returns its path. */
async function migratedPgliteTemplate(): Promise<string> {
  const dataDir = join(reportDir, 'pglite-template');
  const database = await openDatabase({ kind: 'pglite', dataDir });
  await database.close();
  const { create } = await import('tar');
  const tarFile = join(reportDir, 'pglite-template.tar');
  await create({ cwd: dataDir, file: tarFile, portable: true }, readdirSync(dataDir));
  rmSync(dataDir, { recursive: true, force: true });
  return tarFile;
}

/** A migrated database on the server of `url`, for `CREATE DATABASE … TEMPLATE`; returns its name and how to drop it. */
async function migratedPostgresTemplate(url: string): Promise<{ name: string; drop: () => Promise<void> }> {
  const name = `wum_template_${process.pid}`;
  await withClient(url, (client) => client.query(`create database ${name}`));
  const databaseUrl = new URL(url);
  databaseUrl.pathname = `/${name}`;
  const database = await openDatabase({ kind: 'postgres', url: databaseUrl.href, poolSize: 1 });
  await database.close();
  return { name, drop: () => withClient(url, (client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined) };
}

/** With WUM_TEST_TIMINGS=1: each file's (top-level suite's) duration from a TAP report, slowest first. */
function timings(tally: Tally): string {
  let tap: string;
  try {
    tap = readFileSync(join(reportDir, `${tally.backend}.tap`), 'utf8');
  } catch {
    return '';
  }
  const rows = [...tap.matchAll(/^(?:not )?ok \d+ - (.*)\n {2}---\n {2}duration_ms: ([\d.]+)/gm)]
    .map((m) => ({ name: m[1]!, seconds: Number(m[2]) / 1000 }))
    .sort((a, b) => b.seconds - a.seconds);
  const total = rows.reduce((sum, r) => sum + r.seconds, 0);
  return [`\n== ${tally.backend}: seconds per file (sum ${total.toFixed(0)} s) ==`, ...rows.map((r) => `${r.seconds.toFixed(1).padStart(7)}  ${r.name}`), ''].join('\n');
}

let cluster: PostgresCluster | undefined;
let postgresUrl = process.env.TEST_DATABASE_URL;
const startPostgres = async (): Promise<Awaited<ReturnType<typeof migratedPostgresTemplate>> | undefined> => {
  if (!postgresUrl) {
    try {
      cluster = await startPostgresCluster();
      postgresUrl = cluster?.url;
    } catch (error) {
      process.stdout.write(`could not start a PostgreSQL cluster: ${(error as Error).message}\n`);
    }
  }
  return postgresUrl ? migratedPostgresTemplate(postgresUrl) : undefined;
};

const tallies: Tally[] = [];
// Types, lint and the dependencies are checked on a full run, or when asked for by `npm test -- lint`.
const staticChecks = only.length === 0 || only.includes('lint') ? runStaticChecks() : undefined;
let postgresTemplate: Awaited<ReturnType<typeof migratedPostgresTemplate>> | undefined;
try {
  // The servers and CLI processes the tests start run the bundles, as `npm start` and `wum` do.
  // Database-free files alone need neither template nor PostgreSQL.
  const databases = perBackend.length > 0;
  const [pgliteTemplate, postgres] = await Promise.all([
    databases ? migratedPgliteTemplate() : undefined,
    databases ? startPostgres() : undefined,
    buildBundles({ ifStale: true }),
  ]);
  postgresTemplate = postgres;
  // `npm test -- lint` may select no file: then only the static checks run.
  const suites = pgliteFiles.length > 0 ? [runSuite('pglite', pgliteFiles, { [TEST_PGLITE_TEMPLATE_VARIABLE]: pgliteTemplate }, true)] : [];
  if (postgresFiles.length > 0 && postgresUrl && postgresTemplate) {
    suites.push(runSuite('postgres', postgresFiles, { TEST_DATABASE_URL: postgresUrl, [TEST_PG_TEMPLATE_VARIABLE]: postgresTemplate.name }, suites.length === 0));
  }
  if (databaseFree.length > 0) {
    suites.push(runSuite('database-free', databaseFree, { NODE_OPTIONS: databaseFreeNodeOptions(process.env.NODE_OPTIONS) }, suites.length === 0));
  }
  for (const suite of suites) {
    const { output, ...tally } = await suite;
    if (output) process.stdout.write(output);
    tallies.push(tally);
  }
  if (staticChecks) {
    const { checks, passed, report } = await staticChecks;
    process.stdout.write(report);
    tallies.push({ backend: 'tsc, eslint and knip', tests: checks, passed, skipped: 0, failed: checks - passed, exitCode: 0 });
  }
  if (process.env.WUM_TEST_TIMINGS === '1') for (const tally of tallies) process.stdout.write(timings(tally));
  if (databases && !postgresUrl) {
    const postgresOnly = perBackend.filter((f) => backendOf.get(f) === 'postgres').length;
    process.stdout.write(`\nPostgreSQL is not installed here and TEST_DATABASE_URL is unset: ran PGlite only (${postgresOnly} files that run on PostgreSQL alone did not run).\n`);
  }
} finally {
  if (!cluster) await postgresTemplate?.drop().catch(() => undefined);
  cluster?.stop();
  rmSync(reportDir, { recursive: true, force: true });
}

process.stdout.write('\n== summary ==\n');
for (const t of tallies) {
  process.stdout.write(`${t.backend}: ${t.tests} tests, ${t.passed} passed, ${t.skipped} skipped, ${t.failed} failed\n`);
}
const passed = tallies.reduce((n, t) => n + t.passed, 0);
const skipped = tallies.reduce((n, t) => n + t.skipped, 0);
const failed = tallies.reduce((n, t) => n + t.failed, 0);
// A run that selected no test fails; one whose only tests said why they cannot run here passes.
const ok = tallies.every((t) => t.exitCode === 0) && failed === 0 && passed + skipped > 0;
process.stdout.write(`total: ${passed} passed, ${failed} failed\n`);
process.exit(ok ? 0 : 1);
