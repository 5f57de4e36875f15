/*
 * A whole-machine CPU profile of one measured window (`perf record -a -g`): unlike a V8 profile
 * of the server, it sees PostgreSQL's backends, the kernel's network path, the garbage
 * collector's threads and the load generator. It splits the samples by process and, within
 * the server and PostgreSQL, by the kind of work (docs/performance.md, "Writes against the
 * plain SQL"). Linux `perf` must be installed; the server runs with `--perf-basic-prof` so that
 * its JavaScript frames have names.
 */
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';

/** Node flag that makes V8 write /tmp/perf-<pid>.map, with which perf names JIT-compiled frames. */
export const PERF_NODE_FLAGS: readonly string[] = ['--perf-basic-prof'];

/** One sample as `perf script` prints it: the thread and its frames, innermost first (`symbol (dso)`). */
interface PerfSample {
  readonly comm: string;
  readonly pid: number;
  readonly tid: number;
  readonly frames: readonly string[];
}

/** Parses `perf script -F comm,pid,tid,ip,sym,dso` (with call chains) into samples. */
function parseSamples(text: string): PerfSample[] {
  const samples: Array<{ comm: string; pid: number; tid: number; frames: string[] }> = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (/^\s/.test(line)) {
      // `\t    7f00c0ffee Builtins_LoadIC (/usr/bin/node)`: the address, then the symbol.
      samples.at(-1)?.frames.push(line.trim().replace(/^[0-9a-f]+\s+/, ''));
      continue;
    }
    const header = /^\s*(.+?)\s+(\d+)\/(\d+)/.exec(line);
    if (header) samples.push({ comm: header[1]!, pid: Number(header[2]), tid: Number(header[3]), frames: [] });
  }
  return samples;
}

/** The PostgreSQL functions whose inclusive share is shown: the executor's phases, the plan cache (and its locks), the commit. */
const POSTGRES_PHASES = [
  ['standard_ExecutorStart', 'executor start'],
  ['standard_ExecutorRun', 'executor run'],
  ['standard_ExecutorFinish', 'executor finish (the CTEs that change rows)'],
  ['standard_ExecutorEnd', 'executor end'],
  ['GetCachedPlan', 'plan cache and table locks'],
  ['CommitTransactionCommand', 'commit'],
] as const;

/** What a sample of the server's main thread was doing, by its innermost frame. */
function serverWork(sample: PerfSample, serverPid: number): string {
  if (sample.tid !== serverPid) return 'other threads (GC, compiler)';
  const top = sample.frames[0] ?? '';
  if (top.includes('[kernel.kallsyms]')) return 'kernel';
  if (top.startsWith('JS:')) return 'JavaScript';
  return 'V8 runtime, builtins, native';
}

const percent = (n: number, of: number) => `${((100 * n) / of).toFixed(1)} %`;
const describe = (counts: Map<string, number>, of: number) =>
  [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([what, n]) => `${what} ${percent(n, of)}`)
    .join(', ');
const add = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);

/**
 * Summarizes a recording: the share of all samples (both cores, idle included) of PostgreSQL,
 * the server (`serverPid`, by the work of its main thread), the load generator
 * (`loadGeneratorPid`) and idle; then PostgreSQL's executor phases, inclusive.
 * @returns three lines of text; `perf script`'s error when it fails.
 */
export function summarizeProfile(file: string, serverPid: number, loadGeneratorPid: number): string {
  const script = spawnSync('perf', ['script', '-i', file, '-F', 'comm,pid,tid,ip,sym,dso'], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (script.status !== 0) return `perf script failed: ${script.stderr.trim()}`;
  const samples = parseSamples(script.stdout);
  const processes = new Map<string, number>();
  const server = new Map<string, number>();
  const postgres = new Map<string, number>();
  for (const sample of samples) {
    if (sample.comm === 'postgres') {
      add(processes, 'PostgreSQL');
      for (const [fn, label] of POSTGRES_PHASES) if (sample.frames.some((f) => f.startsWith(`${fn} `))) add(postgres, label);
    } else if (sample.pid === serverPid) {
      add(processes, 'server');
      add(server, serverWork(sample, serverPid));
    } else if (sample.pid === loadGeneratorPid) add(processes, 'load generator');
    else if (sample.comm === 'swapper') add(processes, 'idle');
    else add(processes, 'other');
  }
  const total = samples.length || 1;
  return [
    `${samples.length} samples: ${describe(processes, total)}`,
    `server: ${describe(server, total)}`,
    `PostgreSQL, inclusive: ${describe(postgres, total)}`,
  ].join('\n');
}

/**
 * Records every CPU for `seconds` (`perf record -a -g -F 999` into `file`) and, once it has
 * ended, resolves with {@link summarizeProfile}'s text. Start it together with the window it
 * measures; {@link removePerfMap} once the server has stopped.
 */
export function recordSystemProfile(file: string, seconds: number, serverPid: number, loadGeneratorPid: number): Promise<string> {
  const perf = spawn('perf', ['record', '-F', '999', '-a', '-g', '-o', file, '--', 'sleep', String(seconds)], { stdio: 'ignore' });
  return new Promise<string>((resolve) => {
    perf.once('error', (error) => resolve(`perf record could not run: ${error.message}`));
    perf.once('exit', (code) => resolve(code === 0 ? summarizeProfile(file, serverPid, loadGeneratorPid) : `perf record exited with ${code}`));
  });
}

/** Removes the map a server started with {@link PERF_NODE_FLAGS} wrote (it grows with each function V8 compiles). */
export function removePerfMap(serverPid: number): void {
  rmSync(`/tmp/perf-${serverPid}.map`, { force: true });
}
