/*
 * `npm test`: runs every test file with Node's test runner, once on embedded PGlite and once
 * on a real PostgreSQL (TEST_DATABASE_URL, or a throw-away cluster started here), then prints
 * how many tests ran on each backend. Exits non-zero if anything failed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgresCluster, type PostgresCluster } from '../test/helpers/postgres-cluster.ts';

interface Tally {
  backend: string;
  tests: number;
  passed: number;
  failed: number;
  exitCode: number;
}

const files = readdirSync('test', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => join('test', f))
  .sort();
const only = process.argv.slice(2);
const selected = only.length > 0 ? files.filter((f) => only.some((o) => f.includes(o))) : files;
const reportDir = mkdtempSync(join(tmpdir(), 'wum-test-report-'));

function count(tap: string, name: string): number {
  const match = new RegExp(`^# ${name} (\\d+)$`, 'm').exec(tap);
  return match ? Number(match[1]) : 0;
}

function runSuite(backend: string, env: NodeJS.ProcessEnv): Tally {
  process.stdout.write(`\n== ${backend}: ${selected.length} test files ==\n`);
  const tapFile = join(reportDir, `${backend}.tap`);
  const result = spawnSync(
    process.execPath,
    [
      '--import', 'tsx',
      '--test',
      '--test-concurrency=2',
      '--test-reporter=spec', '--test-reporter-destination=stdout',
      '--test-reporter=tap', `--test-reporter-destination=${tapFile}`,
      ...selected,
    ],
    { stdio: 'inherit', env: { ...process.env, ...env, WUM_TEST_BACKEND: backend } },
  );
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
    failed: count(tap, 'fail') + count(tap, 'cancelled'),
    exitCode: result.status ?? 1,
  };
}

const tallies: Tally[] = [runSuite('pglite', {})];

let cluster: PostgresCluster | undefined;
let postgresUrl = process.env.TEST_DATABASE_URL;
if (!postgresUrl) {
  try {
    cluster = await startPostgresCluster();
    postgresUrl = cluster?.url;
  } catch (error) {
    process.stdout.write(`could not start a PostgreSQL cluster: ${(error as Error).message}\n`);
  }
}
try {
  if (postgresUrl) {
    tallies.push(runSuite('postgres', { TEST_DATABASE_URL: postgresUrl }));
  } else {
    process.stdout.write('\nPostgreSQL is not installed here and TEST_DATABASE_URL is unset: ran PGlite only.\n');
  }
} finally {
  cluster?.stop();
  rmSync(reportDir, { recursive: true, force: true });
}

process.stdout.write('\n== summary ==\n');
for (const t of tallies) {
  process.stdout.write(`${t.backend}: ${t.tests} tests, ${t.passed} passed, ${t.failed} failed\n`);
}
const passed = tallies.reduce((n, t) => n + t.passed, 0);
const failed = tallies.reduce((n, t) => n + t.failed, 0);
const ok = tallies.every((t) => t.exitCode === 0) && failed === 0 && passed > 0;
process.stdout.write(`total: ${passed} passed, ${failed} failed\n`);
process.exit(ok ? 0 : 1);
