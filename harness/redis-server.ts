import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDebianProgram } from './debian-programs.ts';
import { freePort } from './free-port.ts';

/** A throw-away redis-server on loopback, started by a test or a benchmark. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Freezes the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): void;
  /** Thaws a paused server (SIGCONT). */
  resume(): void;
  /** Stops the server (SIGKILL; its data is gone) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts a new, empty server on the same port (after {@link stop}). */
  restart(): Promise<void>;
}

const READY = /Ready to accept connections/;

function launch(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server did not start on port ${port}:\n${out}`));
    }, 20_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (READY.test(out)) {
        clearTimeout(timer);
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        resolve(child);
      }
    });
    child.stderr.resume();
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code}) before it was ready:\n${out}`));
    });
  });
}

/**
 * Starts redis-server (installing the Debian package `redis-server` when it is missing) on a
 * free loopback port, without persistence.
 */
export async function startRedisServer(): Promise<RedisServer> {
  ensureDebianProgram('redis-server', 'redis-server');
  let dir = mkdtempSync(join(tmpdir(), 'wum-redis-'));
  const port = await freePort();
  let child = await launch(port, dir);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
    async stop() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    async restart() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
      dir = mkdtempSync(join(tmpdir(), 'wum-redis-'));
      child = await launch(port, dir);
    },
  };
}
