/*
 * `npm run bench:embedded`: how long the server takes to listen on the embedded PGlite, and
 * its peak resident memory, on a new DATA_DIR (first start: demo seed included) and on the
 * same DATA_DIR again (later start), each several times, for three ways of starting (VARIANTS:
 * as before the embedded start-up work, after its first round, and `npm start` now;
 * docs/performance.md, "The embedded store"), measured in one run on the
 * same machine.
 *
 * `npm start` is timed without its `prestart` (the bundle and console builds, no-ops once
 * built; this script builds the bundle first). Time to listen runs from spawn to the
 * "Server listening" log line, and the CPU time (user + system) the server used until then,
 * which a busy machine inflates less than wall time; peak RSS is the kernel's high-water mark
 * of the process (VmHWM), read right after it listens, and RSS after one `GET /users` of the
 * demo workspace (the first request loads what the start-up left for later).
 *
 * Options: --runs N (default 3), --only baseline,template,bundle (any of them).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildBundles } from '../scripts/build-bundles.ts';
import { freePort } from '../harness/free-port.ts';
import { sendRequest } from '../harness/server-process.ts';
import { DEMO_KEY_FILE } from '../src/server/demo-key.ts';
import { watchMachineLoad } from './machine-load.ts';
import { median } from './measurement.ts';

const load = watchMachineLoad();

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' }, only: { type: 'string' } } });
const RUNS = Number(values.runs);

/** `node bundle/server.mjs`, as package.json's start script says today (its prestart bundles). */
function startCommand(): string[] {
  const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
  const [program, ...args] = scripts.start!.split(/\s+/);
  if (program !== 'node') throw new Error(`the start script does not run node: ${scripts.start}`);
  return args;
}

/** The TypeScript through tsx, as `npm start` ran it before the bundle. */
const TSX_COMMAND = ['--import', 'tsx', 'src/server/server.ts'];

/**
 * How the server started at each step of that work (docs/performance.md), all on today's code: PGlite's initdb with its
 * default settings (WUM_PGLITE_BASELINE=1, src/storage/database.ts) through tsx, as before the
 * issue; the pre-initialised data directory and the embedded settings through tsx, as the
 * first round of the issue shipped; and `npm start` as it is now (the bundle).
 */
interface Variant {
  readonly name: string;
  readonly key: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
}
const ALL_VARIANTS: Variant[] = [
  { name: 'initdb, default settings, tsx', key: 'baseline', args: TSX_COMMAND, env: { WUM_PGLITE_BASELINE: '1' } },
  { name: 'template, settings, tsx', key: 'template', args: TSX_COMMAND, env: {} },
  { name: 'npm start (bundle, migrated template, settings)', key: 'bundle', args: startCommand(), env: {} },
];
const VARIANTS = ALL_VARIANTS.filter((v) => !values.only || values.only.split(',').includes(v.key));

/** CPU seconds (user + system) the process has used so far: on a busy machine, steadier than wall time. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
  // utime and stime, fields 14 and 15 of proc(5), in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function memoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

interface Start {
  readonly listenMs: number;
  readonly cpuSeconds: number;
  readonly peakMb: number;
  readonly rssAfterRequestMb: number;
  readonly apiKey: string | undefined;
}

/** Starts the server on `dataDir`, waits for it to listen, sends one request, stops it. */
async function start(args: readonly string[], dataDir: string, env: Record<string, string>, apiKey: string | undefined): Promise<Start> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const listening = await new Promise<{ ms: number; cpu: number; peak: number }>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const before = out;
      out += chunk;
      if (!/Server listening/.test(before) && /Server listening/.test(out)) resolve({ ms: performance.now() - started, cpu: cpuSeconds(child.pid!), peak: memoryMb(child.pid!).peak });
    });
    child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening:\n${err.slice(-2000)}`)));
  });
  // The demo key follows the listening line, in a file of DATA_DIR (stdout is not a terminal here).
  await new Promise((resolve) => setTimeout(resolve, 100));
  const keyFile = join(dataDir, DEMO_KEY_FILE);
  const key = apiKey ?? (existsSync(keyFile) ? /export WUM_API_KEY=(\S+)/.exec(readFileSync(keyFile, 'utf8'))?.[1] : undefined);
  if (key) {
    const response = await sendRequest(port, 'GET', '/api/external/v2/users', { host: `demo.localhost:${port}`, headers: { 'x-api-key': key } });
    if (response.status !== 200) throw new Error(`GET /users answered ${response.status}: ${response.body}`);
  }
  const after = memoryMb(child.pid!);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return { listenMs: listening.ms, cpuSeconds: listening.cpu, peakMb: listening.peak, rssAfterRequestMb: after.rss, apiKey: key };
}

const range = (xs: number[], digits = 0) => `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

await buildBundles({ ifStale: true });
const scratch = mkdtempSync(join(tmpdir(), 'wum-bench-embedded-'));
const rows: string[][] = [];
try {
  for (const variant of VARIANTS) {
    const first: Start[] = [];
    const later: Start[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      const dataDir = join(scratch, `${variant.key}-${run}`, 'data');
      const created = await start(variant.args, dataDir, variant.env, undefined);
      first.push(created);
      later.push(await start(variant.args, dataDir, variant.env, created.apiKey));
      process.stderr.write(`${variant.name} run ${run + 1}: first ${created.listenMs.toFixed(0)} ms ${created.cpuSeconds} s CPU ${created.peakMb.toFixed(0)} MB; later ${later.at(-1)!.listenMs.toFixed(0)} ms ${later.at(-1)!.cpuSeconds} s CPU ${later.at(-1)!.peakMb.toFixed(0)} MB\n`);
      rmSync(dataDir, { recursive: true, force: true });
    }
    for (const [label, starts] of [['new DATA_DIR', first], ['existing DATA_DIR', later]] as const) {
      rows.push([
        `${variant.name}, ${label}`,
        range(starts.map((s) => s.listenMs)),
        range(starts.map((s) => s.cpuSeconds), 2),
        range(starts.map((s) => s.peakMb)),
        range(starts.map((s) => s.rssAfterRequestMb)),
      ]);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.stdout.write(`embedded start-up: ${RUNS} runs each; ${cpus().length} cores; Node ${process.version}; ${load.summary()}\n`);
process.stdout.write('median (min–max)\n\n');
const head = ['start', 'time to listen ms', 'CPU s to listen', 'peak RSS MB', 'RSS after first GET /users MB'];
for (const cells of [head, head.map(() => '---'), ...rows]) process.stdout.write(`| ${cells.join(' | ')} |\n`);
