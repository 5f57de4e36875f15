/*
 * Sections of `npm run bench` measured by another benchmark command, run as a child process
 * with `--json`: the writes against the plain SQL (bench/writes.ts, on a PostgreSQL cluster of
 * its own) and the import job of 100,000 users on both backends (bench/import-job.ts). Each
 * becomes rows with the goal of docs/performance.md, "The targets", and its verdict.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IMPORT_BACKEND_LABEL as LABEL, IMPORT_GOAL_SECONDS, IMPORT_GOAL_USERS, type ImportFigures } from './import-figures.ts';
import type { MachineLoad } from './machine-load.ts';
import type { ReportRow, ReportSection } from './report.ts';
import type { WriteFigures } from './write-figures.ts';

const ROUTE = { POST: 'POST /users', PATCH: 'PATCH /users/{email}', DELETE: 'DELETE /users/{email}' } as const;

/**
 * Runs `node --import tsx bench/<script> … --json <file>` and returns the file's JSON.
 * @throws Error with the child's exit status when it fails or writes no file.
 */
function runChild<T>(script: string, args: readonly string[], log: (message: string) => void): T {
  const dir = mkdtempSync(join(tmpdir(), 'wum-bench-child-'));
  try {
    const file = join(dir, 'figures.json');
    log(`${script} ${args.join(' ')}`);
    const run = spawnSync(process.execPath, ['--import', 'tsx', join('bench', script), ...args, '--json', file], {
      // Its own table goes to the log (stderr): the run's standard output is the one report.
      stdio: ['ignore', 2, 2],
    });
    if (run.status !== 0) throw new Error(`bench/${script} exited with ${run.status ?? run.signal}`);
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The two rows of one write: its rate against the plain route's (goal ≥ 1.0×), and its CPU per request (goal ≤ 1.5×). */
function writeRows(f: WriteFigures, load: MachineLoad): ReportRow[] {
  const rates = (side: WriteFigures['service']) => side.rates.map((r) => r.toFixed(0)).join('/');
  const cpu = (side: WriteFigures['service']) => `${side.serverUs.toFixed(0)} + ${side.databaseUs.toFixed(0)}`;
  const clean = f.service.errors === 0 && f.plain.errors === 0;
  // The service's CPU per request over the plain route's (byCpu is the plain route's over the service's).
  const cpuRatio = 1 / f.byCpu;
  return [
    {
      scenario: `${ROUTE[f.write]} ÷ plain route, by rate (service / plain req/s, each turn)`,
      note: `${load.ratio(f.byRate)}: ${rates(f.service)} / ${rates(f.plain)}${clean ? '' : `; errors ${f.service.errors} / ${f.plain.errors}`}`,
      target: { text: '≥ 1.0× (≥ 0.8× with its reason measured)', met: f.byRate >= 1 && clean },
    },
    {
      scenario: `${ROUTE[f.write]}: server + database CPU µs per request, service ÷ plain route`,
      note: `${load.ratio(cpuRatio)}: ${cpu(f.service)} / ${cpu(f.plain)}`,
      target: { text: '≤ 1.5×', met: cpuRatio <= 1.5 },
    },
  ];
}

/**
 * The writes of the service against the plain SQL on PostgreSQL (bench/writes.ts): `rounds`
 * turns of each server, `seconds` each write, workspaces of `users` users.
 */
export function measureWritesSection(options: {
  readonly seconds: number;
  readonly rounds: number;
  readonly users: number;
  readonly load: MachineLoad;
  readonly log: (message: string) => void;
}): ReportSection {
  const figures = runChild<WriteFigures[]>(
    'writes.ts',
    ['--backend', 'postgres', '--skip-build', '--seconds', String(options.seconds), '--rounds', String(options.rounds), '--users', String(options.users)],
    options.log,
  );
  return {
    title: `Writes against the plain SQL (PostgreSQL, ${options.rounds} turns each, ${options.seconds} s a write; bench/writes.ts)`,
    rows: figures.flatMap((f) => writeRows(f, options.load)),
  };
}

/** The rows of one import job: its time (goal per backend at 100,000 users) and the listing's p99 beside it (goal ≤ 2× idle). */
function importRows(f: ImportFigures, load: MachineLoad): ReportRow[] {
  const goal = IMPORT_GOAL_SECONDS[f.backend];
  const ratio = f.duringP99Ms / f.idleP99Ms;
  const complete = f.status === 'completed' && f.added === f.users;
  return [
    {
      scenario: `import job of ${f.users} users, ${LABEL[f.backend]} (job ${f.status}, ${f.added} added; users/s)`,
      note: `${f.seconds.toFixed(1)} s (upload ${f.uploadSeconds.toFixed(1)} s), ${(f.users / f.seconds).toFixed(0)}/s`,
      target: { text: `≤ ${goal} s at ${IMPORT_GOAL_USERS}`, met: complete && f.users >= IMPORT_GOAL_USERS && f.seconds <= goal },
    },
    {
      scenario: `GET /users page 1 p99 during the job ÷ idle, ${LABEL[f.backend]} (two callers)`,
      note: `${load.ratio(ratio)}: ${f.duringP99Ms.toFixed(1)} / ${f.idleP99Ms.toFixed(1)} ms`,
      target: { text: '≤ 2×', met: ratio <= 2 },
    },
  ];
}

/** An import job of `users` new users (CSV through the SDK) on embedded PGlite, then on PostgreSQL (bench/import-job.ts). */
export function measureImportSection(options: { readonly users: number; readonly load: MachineLoad; readonly log: (message: string) => void }): ReportSection {
  const rows = (['pglite', 'postgres'] as const).flatMap((backend) =>
    importRows(runChild<ImportFigures>('import-job.ts', ['--backend', backend, '--users', String(options.users)], options.log), options.load),
  );
  return { title: `Import job (POST /users/imports, the server as npm start runs it; bench/import-job.ts)`, rows };
}
