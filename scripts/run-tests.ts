/*
 * `npm test`: runs every test file with Node's test runner, once on embedded PGlite and once
 * on a real PostgreSQL (TEST_DATABASE_URL, or a throw-away cluster started here), then prints
 * how many tests ran on each backend. Exits non-zero if anything failed.
 *
 * Before the suites it migrates one database per backend, which the tests copy instead of
 * migrating their own: a tar of a migrated PGlite data directory (WUM_TEST_PGLITE_TEMPLATE),
 * and a migrated PostgreSQL database that `CREATE DATABASE … TEMPLATE` copies
 * (WUM_TEST_PG_TEMPLATE); and it bundles the server and the CLI (scripts/build-bundles.ts), which
 * the tests' server and `wum` processes run, as `npm start` does. Each suite's files are then
 * cut into groups of up to ten, each group one Node process that runs its files one after the
 * other (`groupFiles`, below), and the groups of all suites share one queue, one more process
 * in flight than the machine has cores (`runQueue`); each group's output is printed when it
 * ends, under a line naming its suite and files. WUM_TEST_TIMINGS=1 prints each file's duration
 * after the suites (docs/performance.md, "npm test").
 *
 * A file marked `// database-free` (scripts/database-free.ts) opens no database: it runs once,
 * in a third suite beside the two, whose processes cannot load a database driver (a marked file
 * that opens a database fails there). A file marked `// one backend: pglite` or `… postgres`
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
import { useScratchTmpdir } from './test-scratch.ts';
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
// Every throw-away file of the run, its processes' too, in one directory removed at the end.
useScratchTmpdir();
const reportDir = mkdtempSync(join(tmpdir(), 'wum-test-report-'));
// Test processes in flight, all suites together (WUM_TEST_CONCURRENCY): one more than the
// machine has cores, because some files mostly wait (for a failover, a due time, a server to
// start) while another process has the CPU; more only adds contention, and a loaded machine
// times out the tests that start servers and CLI processes (docs/performance.md, "npm test").
const concurrency = Number(process.env.WUM_TEST_CONCURRENCY) || availableParallelism() + 1;

// Test files per process (WUM_TEST_GROUP_SIZE; 1 for a process per file). Each file is still
// its own module, with its own database and app; what the files of a group share is the one
// Node process, which loads the TypeScript loader, the service's modules and their
// dependencies once instead of once per file (about 1.5 s of CPU each, docs/performance.md,
// "npm test").
const groupSize = Number(process.env.WUM_TEST_GROUP_SIZE) || 10;

/** Up to `groupSize` test files of one suite that one Node process runs, one after the other. */
interface Group {
  readonly suite: string;
  readonly index: number;
  readonly files: readonly string[];
  readonly env: NodeJS.ProcessEnv;
}

/** `suiteFiles` in groups of up to `groupSize`, in order. */
function groupFiles(suite: string, suiteFiles: readonly string[], env: NodeJS.ProcessEnv): Group[] {
  const groups: Group[] = [];
  for (let i = 0; i < suiteFiles.length; i += groupSize) {
    groups.push({ suite, index: groups.length + 1, files: suiteFiles.slice(i, i + groupSize), env: { ...env, WUM_TEST_BACKEND: suite } });
  }
  return groups;
}

/**
 * The groups of every suite in one queue, taking turns: each free process slot takes the next
 * group, whichever suite it is of, so the suites share the machine until the last group ends
 * instead of one suite's files waiting behind the other's. The files are in path order, which
 * puts the long ones (`cli/`, `console/`, `e2e/`) in the first half of each suite.
 */
function interleave(suites: readonly Group[][]): Group[] {
  const queue: Group[] = [];
  for (let i = 0; suites.some((groups) => i < groups.length); i++) {
    for (const groups of suites) if (i < groups.length) queue.push(groups[i]!);
  }
  return queue;
}

/** How a group's process ended, and its TAP report ('' when it wrote none: it failed before its first test). */
interface GroupRun {
  readonly exitCode: number;
  readonly tap: string;
}

/**
 * The head of each group's entry module: once its last test has ended, a process still running
 * 30 s later is held by something a test left open (a server still listening after a failed
 * test, say); it names what and exits with 1, which counts as a failure, instead of keeping the
 * run waiting until CI's own limit. 30 s, as a server a last hook stopped may take seconds to
 * exit on a loaded machine; Node's --test-force-exit would lose the TAP report.
 */
const EXIT_WATCH = `import { after } from 'node:test';
after(() => {
  setTimeout(() => {
    process.stderr.write('still running 30 s after its last test, held by: ' + process.getActiveResourcesInfo().join(', ') + '\\n');
    process.exit(1);
  }, 30_000).unref();
});
`;

/**
 * Runs a group's files in one Node process: an entry module importing each (in `reportDir`),
 * run with Node's test runner's spec reporter to a file and its TAP reporter to another.
 * Resolves with how it ended and its spec output, under a header naming the files.
 */
async function runGroup(group: Group): Promise<GroupRun & { output: string }> {
  const name = join(reportDir, `${group.suite}-${group.index}`);
  writeFileSync(`${name}.test.mjs`, EXIT_WATCH + group.files.map((f) => `import ${JSON.stringify(pathToFileURL(resolve(f)).href)};\n`).join(''));
  const out = openSync(`${name}.out`, 'w');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--test-reporter=spec', `--test-reporter-destination=stdout`, '--test-reporter=tap', `--test-reporter-destination=${name}.tap`, `${name}.test.mjs`],
    { stdio: ['ignore', out, out], env: { ...process.env, ...group.env } },
  );
  const exitCode = await new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? 1)));
  closeSync(out);
  let tap = '';
  try {
    tap = readFileSync(`${name}.tap`, 'utf8');
  } catch {
    // No report: the process failed before its first test, and its exit code says so.
  }
  const header = `\n== ${group.suite} ${group.index}: ${group.files.join(', ')} ==\n`;
  return { exitCode, tap, output: header + readFileSync(`${name}.out`, 'utf8') };
}

/** Runs `queue` with `concurrency` processes in flight, printing each group's output as it ends. */
async function runQueue(queue: readonly Group[]): Promise<Map<Group, GroupRun>> {
  const runs = new Map<Group, GroupRun>();
  let next = 0;
  const slot = async () => {
    while (next < queue.length) {
      const group = queue[next++]!;
      const { output, ...run } = await runGroup(group);
      process.stdout.write(output);
      runs.set(group, run);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, slot));
  return runs;
}

/** The runs of `suite`'s groups. */
function runsOf(suite: string, runs: ReadonlyMap<Group, GroupRun>): GroupRun[] {
  return [...runs].filter(([group]) => group.suite === suite).map(([, run]) => run);
}

/** A suite's tally, read from its groups' TAP reports. */
function suiteTally(suite: string, runs: ReadonlyMap<Group, GroupRun>): Tally {
  const suiteRuns = runsOf(suite, runs);
  const tap = suiteRuns.map((run) => run.tap).join('\n');
  // A process that failed with no failed test in its report (a file that threw while it was
  // imported, a crash) counts as one failure, as Node's runner counts a file that fails so.
  const crashed = suiteRuns.filter((run) => run.exitCode !== 0 && failures(run.tap) === 0).length;
  return {
    backend: suite,
    tests: sum(tap, 'tests') + crashed,
    passed: sum(tap, 'pass'),
    skipped: sum(tap, 'skipped'),
    failed: failures(tap) + crashed,
    exitCode: suiteRuns.some((run) => run.exitCode !== 0) ? 1 : 0,
  };
}

/** The sum of every `# name N` line of several TAP reports joined. */
function sum(tap: string, name: string): number {
  return [...tap.matchAll(new RegExp(`^# ${name} (\\d+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
}

/** Failed and cancelled tests of TAP reports. */
function failures(tap: string): number {
  return sum(tap, 'fail') + sum(tap, 'cancelled');
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

/** With WUM_TEST_TIMINGS=1: each file's (top-level suite's) duration in a suite's groups, slowest first. */
function timings(suite: string, runs: ReadonlyMap<Group, GroupRun>): string {
  const tap = runsOf(suite, runs).map((run) => run.tap).join('\n');
  const rows = [...tap.matchAll(/^(?:not )?ok \d+ - (.*)\n {2}---\n {2}duration_ms: ([\d.]+)/gm)]
    .map((m) => ({ name: m[1]!, seconds: Number(m[2]) / 1000 }))
    .sort((a, b) => b.seconds - a.seconds);
  const total = rows.reduce((n, r) => n + r.seconds, 0);
  return [`\n== ${suite}: seconds per file (sum ${total.toFixed(0)} s) ==`, ...rows.map((r) => `${r.seconds.toFixed(1).padStart(7)}  ${r.name}`), ''].join('\n');
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
const showTimings = process.env.WUM_TEST_TIMINGS === '1';
// Types, lint and the dependencies are checked on a full run, or when asked for by `npm test -- lint`.
const staticChecks = only.length === 0 || only.includes('lint') ? runStaticChecks().then((result) => ({ ...result, at: performance.now() })) : undefined;
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
  const suites: Group[][] = [];
  if (databaseFree.length > 0) {
    suites.push(groupFiles('database-free', databaseFree, { NODE_OPTIONS: databaseFreeNodeOptions(process.env.NODE_OPTIONS) }));
  }
  if (pgliteFiles.length > 0) suites.push(groupFiles('pglite', pgliteFiles, { [TEST_PGLITE_TEMPLATE_VARIABLE]: pgliteTemplate }));
  if (postgresFiles.length > 0 && postgresUrl && postgresTemplate) {
    suites.push(groupFiles('postgres', postgresFiles, { TEST_DATABASE_URL: postgresUrl, [TEST_PG_TEMPLATE_VARIABLE]: postgresTemplate.name }));
  }
  const queued = performance.now();
  const runs = await runQueue(interleave(suites));
  const ended = performance.now();
  const suiteNames = suites.map((groups) => groups[0]!.suite);
  tallies.push(...suiteNames.map((suite) => suiteTally(suite, runs)));
  if (staticChecks) {
    const { checks, passed, report, at } = await staticChecks;
    process.stdout.write(report);
    if (showTimings) process.stdout.write(`\nstatic checks ended after ${(at / 1000).toFixed(0)} s\n`);
    tallies.push({ backend: 'tsc, eslint and knip', tests: checks, passed, skipped: 0, failed: checks - passed, exitCode: 0 });
  }
  if (showTimings) {
    process.stdout.write(`\nthe first group started after ${(queued / 1000).toFixed(0)} s (templates, bundles), the last ended after ${(ended / 1000).toFixed(0)} s\n`);
    for (const suite of suiteNames) process.stdout.write(timings(suite, runs));
  }
  if (databases && !postgresUrl) {
    const postgresOnly = perBackend.filter((f) => backendOf.get(f) === 'postgres').length;
    process.stdout.write(`\nPostgreSQL is not installed here and TEST_DATABASE_URL is unset: ran PGlite only (${postgresOnly} files that run on PostgreSQL alone did not run).\n`);
  }
} finally {
  if (!cluster) await postgresTemplate?.drop().catch(() => undefined);
  cluster?.stop();
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
