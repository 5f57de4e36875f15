import cluster, { type Worker } from 'node:cluster';
import { hostname } from 'node:os';
import type { Config } from '../config/load-config.ts';

/*
 * WORKERS=N (docs/operations.md, "Replicas and scaling"): the primary process forks N workers with node:cluster;
 * they share the listening port (the primary hands connections out round-robin) and each
 * opens its own database pool. The primary serves nothing itself: it replaces a worker that
 * dies, relays cache invalidations between workers, and on SIGTERM/SIGINT asks every worker
 * to shut down gracefully and exits once they all have.
 */

/** IPC message of a worker whose caches changed (a key revoked, the catalogue edited). */
const CACHES_CHANGED = 'wum:caches-changed';
/** Extra time the primary waits beyond a worker's own shutdown timeout before SIGKILL. */
const SHUTDOWN_MARGIN_MS = 5_000;

const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/** A JSON log line in pino's shape, so the primary's lines sit with the workers' in one stream. */
function logger(level: string) {
  const threshold = LEVELS[level] ?? LEVELS.info!;
  return (at: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}) => {
    const value = LEVELS[at]!;
    if (value < threshold) return;
    process.stdout.write(`${JSON.stringify({ level: value, time: Date.now(), pid: process.pid, hostname: hostname(), ...fields, msg })}\n`);
  };
}

/**
 * Runs the primary of WORKERS=N: forks `config.workers` workers and supervises them until
 * SIGTERM/SIGINT, when it relays SIGTERM to each, waits for them (up to their shutdown
 * timeout plus 5 s, then SIGKILL) and exits 0 when every worker exited 0, else 1. A worker
 * that exits before it listened (bad database URL, failed migration) stops the whole server
 * with exit status 1 rather than being forked again in a loop; one that dies later is replaced.
 * Source: docs/operations.md, "Replicas and scaling" and "Start and shutdown"; Node.js `cluster` documentation.
 */
export function runPrimary(config: Config): void {
  const log = logger(config.logLevel);
  const listening = new WeakSet<Worker>();
  let stopping = false;
  let failed = false;

  const fork = () => {
    const worker = cluster.fork();
    worker.on('message', (message: unknown) => {
      if (message !== CACHES_CHANGED) return;
      for (const other of Object.values(cluster.workers ?? {})) {
        if (other && other !== worker && other.isConnected()) other.send(CACHES_CHANGED);
      }
    });
    return worker;
  };

  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    log('info', 'stopping workers', { reason });
    const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (alive.length === 0) process.exit(failed ? 1 : 0);
    for (const worker of alive) worker.process.kill('SIGTERM');
    setTimeout(() => {
      log('error', 'workers did not stop in time; killing them');
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
      process.exit(1);
    }, config.http.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS).unref();
  };

  cluster.on('listening', (worker, address) => {
    listening.add(worker);
    log('info', 'worker listening', { worker: worker.process.pid, port: address.port });
  });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (code !== 0 || signal !== null) failed = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
      return;
    }
    if (!listening.has(worker)) {
      log('error', 'a worker exited before it listened; stopping', { worker: worker.process.pid, code, signal });
      failed = true;
      stop('worker failed to start');
      return;
    }
    log('warn', 'a worker exited; starting another', { worker: worker.process.pid, code, signal });
    fork();
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop(signal));
  log('info', `starting ${config.workers} workers`, { workers: config.workers });
  for (let i = 0; i < config.workers; i += 1) fork();
}

/**
 * In a worker, ignores SIGINT and returns it as the signal close-with-grace must skip: a
 * terminal's Ctrl-C reaches every process of the group, the primary relays it as SIGTERM,
 * and a second signal would make a worker exit at once with status 1. Outside a worker,
 * returns no signal and changes nothing.
 */
export function leaveSignalsToPrimary(): Array<'SIGINT'> {
  if (!cluster.isWorker) return [];
  process.on('SIGINT', () => {});
  return ['SIGINT'];
}

/**
 * Connects a worker's caches to its siblings': `announce` tells the others (through the
 * primary) that this process changed what they may have cached; `onChange` runs when a
 * sibling announced. Outside a worker, `announce` does nothing.
 */
export function shareCacheChanges(onChange: () => void): { announce(): void } {
  if (!cluster.isWorker) return { announce() {} };
  process.on('message', (message: unknown) => {
    if (message === CACHES_CHANGED) onChange();
  });
  return { announce: () => void process.send?.(CACHES_CHANGED) };
}
