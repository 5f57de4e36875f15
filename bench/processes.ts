/*
 * Child processes of the benchmark: a server started with plain `node` (compiled JavaScript),
 * waited for on loopback, stopped with SIGTERM; and /proc sampling of a process tree's
 * resident memory and CPU time while a scenario runs (Linux only).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { freePort } from '../harness/free-port.ts';
import { withClient } from '../harness/postgres-cluster.ts';
import { TEST_SECRETS_KEY } from '../harness/backend.ts';

/**
 * Compiles the service to `dist/` (`npm run build`): the benchmark measures the compiled
 * server, never tsx. @throws Error when the build fails.
 */
export function buildService(): void {
  const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('npm run build failed');
}

/** A started server process. */
export interface ServerHandle {
  readonly pid: number;
  readonly port: number;
  /** Milliseconds from spawn until `GET /healthz` first answered 200. */
  readonly startupMs: number;
  /** Sends SIGTERM and resolves with the exit code (or signal); SIGKILL after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<number | string>;
  /** Sends SIGKILL at once (for an interrupted run). */
  kill(): void;
  /** What the process wrote to stderr so far (its stdout is discarded: request logs). */
  stderr(): string;
}

/** Resolves with the status of one `GET path` on 127.0.0.1:`port`, or 0 when nothing answers. */
function probe(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

function exitOf(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(child.signalCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
}

/**
 * Starts `node [nodeArgs] script` with exactly `env` (plus PATH and HOME) and waits until
 * `GET /healthz` answers 200, polling every 25 ms.
 * @throws Error with the process's stderr when it exits first or `timeoutMs` passes.
 */
export async function startServer(
  script: string,
  env: Record<string, string>,
  port: number,
  options: { readonly timeoutMs?: number; readonly nodeArgs?: readonly string[] } = {},
): Promise<ServerHandle> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const started = performance.now();
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', WEBHOOK_LOOPBACK_ONLY: 'true', ...(env.DATABASE_URL ? { SECRETS_KEY: TEST_SECRETS_KEY } : {}), ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
    // Its own process group, so that an interrupted run can kill workers along with it.
    detached: true,
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-8000)));
  const exited = exitOf(child);
  let done = false;
  void exited.then(() => (done = true));
  while (!done) {
    if ((await probe(port, '/healthz')) === 200) break;
    if (performance.now() - started > timeoutMs) {
      child.kill('SIGKILL');
      throw new Error(`${script} did not answer within ${timeoutMs} ms\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  if (done) throw new Error(`${script} exited (${await exited}) before answering\n${stderr}`);
  const startupMs = performance.now() - started;
  return {
    pid: child.pid!,
    port,
    startupMs,
    stderr: () => stderr,
    kill() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    },
    async stop(stopTimeoutMs = 20_000) {
      if (!done) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** The compiled server (`npm run build`), as `npm run start:prod` runs it. */
export const SERVER_SCRIPT = 'dist/src/server/server.js';

/** Node flags that make a server write a V8 CPU profile into `bench-profiles/` when it exits (`--cpu-prof` of the bench commands). */
export const CPU_PROFILE_FLAGS: readonly string[] = ['--cpu-prof', '--cpu-prof-dir=bench-profiles'];

/**
 * A `start` for a section of the benchmark (bench/section-bench.ts): the compiled server with
 * `npm run start:prod`'s heap cap (and `extraNodeArgs`, e.g. {@link CPU_PROFILE_FLAGS}) on a
 * free port, added to `started` so that the run stops it.
 */
export function startingProdServers(started: ServerHandle[], extraNodeArgs: readonly string[] = []): (env: Record<string, string>) => Promise<ServerHandle> {
  return async (env) => {
    const server = await startServer(SERVER_SCRIPT, env, await freePort(), { nodeArgs: ['--max-old-space-size=128', ...extraNodeArgs] });
    started.push(server);
    return server;
  };
}

/** The pid of the cluster's postmaster: the parent of a backend (its descendants are the database's CPU). */
export function postmasterPid(url: string): Promise<number> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    const stat = readFileSync(`/proc/${rows[0]!.pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  });
}

const CLOCK_TICKS_PER_SECOND = 100;
const PAGE_BYTES = 4096;

interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  /** utime + stime, in clock ticks. */
  readonly cpuTicks: number;
  readonly rssBytes: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      pid,
      ppid: Number(fields[1]),
      cpuTicks: Number(fields[11]) + Number(fields[12]),
      rssBytes: Number(fields[21]) * PAGE_BYTES,
    };
  } catch {
    return undefined;
  }
}

/** `root` and every live descendant of it. */
export function processTree(root: number): ProcStat[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readStat(Number(name)))
    .filter((s): s is ProcStat => s !== undefined);
  const children = new Map<number, ProcStat[]>();
  for (const stat of all) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const rootStat = all.find((s) => s.pid === root);
  if (!rootStat) return [];
  const tree: ProcStat[] = [];
  const queue = [rootStat];
  while (queue.length > 0) {
    const next = queue.shift()!;
    tree.push(next);
    queue.push(...(children.get(next.pid) ?? []));
  }
  return tree;
}

/** Resource use of a process tree over a time window. */
export interface Usage {
  /** CPU time over wall time, in percent of one core (200 = two cores busy). */
  readonly cpuPercent: number;
  /** Largest resident set of any single process of the tree, in bytes. */
  readonly maxRssBytes: number;
  /** Largest sum of the resident sets of the tree, in bytes. */
  readonly totalRssBytes: number;
}

/** Samples a process tree every `intervalMs` until stopped. */
export interface UsageSampler {
  stop(): Usage;
}

/**
 * Starts sampling the tree under `root` (descendants may come and go, as PostgreSQL
 * backends do). CPU is the growth of utime+stime of the processes seen at both ends of
 * each interval, so short-lived processes are undercounted.
 */
export function sampleUsage(root: number, intervalMs = 500): UsageSampler {
  const startedAt = performance.now();
  let last = new Map(processTree(root).map((s) => [s.pid, s.cpuTicks]));
  let ticks = 0;
  let maxRss = 0;
  let totalRss = 0;
  const sample = () => {
    const tree = processTree(root);
    const now = new Map<number, number>();
    for (const stat of tree) {
      now.set(stat.pid, stat.cpuTicks);
      const before = last.get(stat.pid);
      if (before !== undefined) ticks += stat.cpuTicks - before;
      maxRss = Math.max(maxRss, stat.rssBytes);
    }
    totalRss = Math.max(totalRss, tree.reduce((sum, s) => sum + s.rssBytes, 0));
    last = now;
  };
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const seconds = (performance.now() - startedAt) / 1000;
      return { cpuPercent: (ticks / CLOCK_TICKS_PER_SECOND / seconds) * 100, maxRssBytes: maxRss, totalRssBytes: totalRss };
    },
  };
}

/** CPU of this process alone (the load generator: autocannon, or the SQL replay's clients). */
export interface OwnCpuSampler {
  /** CPU time since start over wall time, in percent of one core. */
  stop(): { readonly cpuPercent: number };
}

/** Starts measuring this process's own CPU time (all its threads, none of its children). */
export function sampleOwnCpu(): OwnCpuSampler {
  const startedAt = performance.now();
  const before = process.cpuUsage();
  return {
    stop() {
      const used = process.cpuUsage(before);
      const seconds = (performance.now() - startedAt) / 1000;
      return { cpuPercent: ((used.user + used.system) / 1e6 / seconds) * 100 };
    },
  };
}
