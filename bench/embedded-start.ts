/*
 * `npm run bench:embedded`: how long `npm start` takes to listen on the embedded PGlite, and
 * its peak resident memory, on a new DATA_DIR (first start: demo seed included) and on the
 * same DATA_DIR again (later start), each several times; first as before the pre-initialised
 * data directory and the embedded settings (WUM_PGLITE_BASELINE=1, src/storage/database.ts),
 * then as shipped, so that both are measured in one run on the same machine.
 *
 * The server is started with the command of package.json's `start` script (the `prestart`
 * console build is not timed: it is a no-op once built). Time to listen runs from spawn to the
 * "Server listening" log line, and the CPU time (user + system) the server used until then,
 * which a busy machine inflates less than wall time; peak RSS is the kernel's high-water mark of the process
 * (VmHWM), read right after it listens, and RSS after one `GET /users` of the demo workspace
 * (the first request loads what the start-up left for later).
 *
 * Options: --runs N (default 3), --only baseline|template.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/postgres-cluster.ts';
import { sendRequest } from '../test/helpers/server-process.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' }, only: { type: 'string' } } });
const RUNS = Number(values.runs);
const BASELINE_ENV: Record<string, string> = { WUM_PGLITE_BASELINE: '1' };
const SHIPPED_ENV: Record<string, string> = {};
const VARIANTS = [
  { name: 'before (initdb, default settings)', env: BASELINE_ENV },
  { name: 'after (template, settings)', env: SHIPPED_ENV },
].filter((v) => !values.only || v.name.startsWith(values.only === 'baseline' ? 'before' : 'after'));

/** `node --import tsx src/http/server.ts`, as package.json's start script says today. */
function startCommand(): string[] {
  const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
  const [program, ...args] = scripts.start!.split(/\s+/);
  if (program !== 'node') throw new Error(`the start script does not run node: ${scripts.start}`);
  return args;
}

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
async function start(dataDir: string, env: Record<string, string>, apiKey: string | undefined): Promise<Start> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, startCommand(), {
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
  // The demo banner follows the listening line.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const key = apiKey ?? /export WUM_API_KEY=(\S+)/.exec(out)?.[1];
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

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[], digits = 0) => `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

const scratch = mkdtempSync(join(tmpdir(), 'wum-bench-embedded-'));
const load = loadavg().map((l) => l.toFixed(2)).join(' ');
const rows: string[][] = [];
try {
  for (const variant of VARIANTS) {
    const first: Start[] = [];
    const later: Start[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      const dataDir = join(scratch, `${variant.name.split(' ')[0]}-${run}`, 'data');
      const created = await start(dataDir, variant.env, undefined);
      first.push(created);
      later.push(await start(dataDir, variant.env, created.apiKey));
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
process.stdout.write(`embedded start-up: ${RUNS} runs each; ${cpus().length} cores; Node ${process.version}; load average at start ${load}, at end ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
process.stdout.write('median (min–max)\n\n');
const head = ['start', 'time to listen ms', 'CPU s to listen', 'peak RSS MB', 'RSS after first GET /users MB'];
for (const cells of [head, head.map(() => '---'), ...rows]) process.stdout.write(`| ${cells.join(' | ')} |\n`);
