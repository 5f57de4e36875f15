import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { DEMO_KEY_FILE } from '../src/server/demo-key.ts';
import { SERVER_BUNDLE } from '../scripts/build-bundles.ts';
import { TEST_SECRETS_KEY } from './backend.ts';

/** The repository root: where `npm start` runs. */
export const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Node's arguments for the server as `npm start` runs it once its `prestart` has bundled it
 * (scripts/build-bundles.ts; `npm test` bundles before the suites).
 */
export const SERVER_ARGS: readonly string[] = [SERVER_BUNDLE];

/** Every variable wum reads; removed from the inherited environment so only a test's own apply. */
const WUM_VARIABLES = [
  'PORT',
  'HOST',
  'BASE_DOMAIN',
  'TRUST_PROXY',
  'DATABASE_URL',
  'DATA_DIR',
  'DATABASE_POOL_SIZE',
  'WORKERS',
  'CACHE_TTL_MS',
  'ADMIN_TOKEN',
  'RATE_LIMIT_PER_KEY',
  'RATE_LIMIT_BURST',
  'AUTH_FAILURE_LIMIT',
  'REDIS_URL',
  'REDIS_TIMEOUT_MS',
  'LOG_LEVEL',
  'SEED_DEMO',
  'DATABASE_STATEMENT_TIMEOUT_MS',
  'DATABASE_QUERY_TIMEOUT_MS',
  'DATABASE_CONNECT_TIMEOUT_MS',
  'REQUEST_TIMEOUT_MS',
  'HEADERS_TIMEOUT_MS',
  'CONNECTION_TIMEOUT_MS',
  'KEEP_ALIVE_TIMEOUT_MS',
  'IDLE_TIMEOUT_MS',
  'MAX_CONNECTIONS',
  'MAX_HEADER_BYTES',
  'MAX_URL_LENGTH',
  'SHUTDOWN_TIMEOUT_MS',
  'SHED_EVENT_LOOP_DELAY_MS',
  'SHED_EVENT_LOOP_UTILIZATION',
  'SHED_HEAP_USED_MB',
  'SHED_RSS_MB',
  'SHED_RETRY_AFTER_SECONDS',
  'SHED_SAMPLE_INTERVAL_MS',
  'WEBHOOK_ALLOW_HTTP',
  'WEBHOOK_ALLOWED_NETWORKS',
  'OUTBOUND_ALLOWED_NETWORKS',
  'WEBHOOK_LOOPBACK_ONLY',
  'WEBHOOK_RETRY_SCHEDULE',
  'WEBHOOK_TIMEOUT_MS',
  'WEBHOOK_CONCURRENCY_PER_ENDPOINT',
  'WEBHOOK_POLL_INTERVAL_MS',
  'WEBHOOK_WORKER',
  'EVENTS_PRUNE_INTERVAL_MS',
  'OPERATOR_OIDC_ISSUER',
  'OPERATOR_OIDC_CLIENT_ID',
  'OPERATOR_OIDC_CLIENT_SECRET',
  'OPERATOR_EMAILS',
  'SECRETS_KEY',
  'SECRETS_KEY_PREVIOUS',
  'POLICY_MIN_DURATION',
  'AUDIT_STREAM_PAUSE_AFTER',
];

/** A server process started by a test, with its output so far. */
export interface ServerProcess {
  readonly child: ChildProcess;
  /** Everything written to stdout / stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout; rejects after `timeoutMs` or on exit. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray>;
  /** Resolves with the exit code (or signal name) once the process exited; rejects after `timeoutMs`. */
  waitForExit(timeoutMs: number): Promise<number | string>;
  /** Kills the whole process group (npm, its shell and node) with SIGKILL unless it has exited. */
  kill(): void;
}

/**
 * Spawns `command args` in the repository root as the leader of a new process group, with the
 * inherited environment minus wum's variables, plus `env`; a start with `DATABASE_URL` gets
 * {@link TEST_SECRETS_KEY} as its `SECRETS_KEY` unless `env` names one (an empty value: none).
 */
export function spawnServer(command: string, args: readonly string[], env: Record<string, string>): ServerProcess {
  if (args.includes(SERVER_BUNDLE) && !existsSync(SERVER_BUNDLE)) {
    throw new Error(`${SERVER_BUNDLE} is missing: run the tests with npm test, or npm run build:bundles first`);
  }
  const inherited = { ...process.env };
  for (const name of WUM_VARIABLES) delete inherited[name];
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    // No test server sends a webhook off the machine (docs/security.md, "Tests stay on the machine").
    env: { ...inherited, WEBHOOK_LOOPBACK_ONLY: 'true', ...(env.DATABASE_URL ? { SECRETS_KEY: TEST_SECRETS_KEY } : {}), ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let exit: number | string | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | string>((resolve) => {
    child.once('close', (code, signal) => {
      exit = code ?? signal ?? 'unknown';
      resolve(exit);
    });
  });

  function describe(): string {
    return `\n--- stdout ---\n${out.slice(-2000)}\n--- stderr ---\n${err.slice(-2000)}`;
  }

  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitForOutput(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(out);
          if (!match) return false;
          done();
          resolve(match);
          return true;
        };
        const onExit = () => {
          if (check()) return;
          done();
          reject(new Error(`process exited (${exit}) before printing ${pattern}${describe()}`));
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${pattern} within ${timeoutMs} ms${describe()}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          child.stdout.off('data', check);
          child.off('close', onExit);
        };
        if (check()) return;
        child.stdout.on('data', check);
        child.once('close', onExit);
      });
    },
    waitForExit(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`still running after ${timeoutMs} ms${describe()}`)), timeoutMs);
      });
      return Promise.race([exited, timeout]).finally(() => clearTimeout(timer));
    },
    kill() {
      if (exit !== undefined || child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
    },
  };
}

/**
 * The demo workspace's key, from the file a first start on an empty `dataDir` writes it to when
 * its stdout is not a terminal (src/server/demo-key.ts), as spawned servers' is: polled until the
 * file holds it.
 * @throws when `server` exits first or `timeoutMs` passes.
 */
export async function waitForDemoKey(server: ServerProcess, dataDir: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const key = existsSync(join(dataDir, DEMO_KEY_FILE)) ? /^\s*export WUM_API_KEY=(\S+)\s*$/m.exec(readFileSync(join(dataDir, DEMO_KEY_FILE), 'utf8'))?.[1] : undefined;
    if (key) return key;
    if (server.child.exitCode !== null || server.child.signalCode !== null) throw new Error(`the server exited before writing the demo key\n${server.stderr().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`no demo key in ${dataDir} within ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** The pid of the node process serving, from its "Server listening" log line (pino's `pid`). */
export function listeningPid(stdout: string): number | undefined {
  const match = /"pid":(\d+)[^\n]*Server listening/.exec(stdout);
  return match ? Number(match[1]) : undefined;
}

/** A response read in full. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  json(): any;
}

/**
 * Sends one HTTP request to 127.0.0.1:`port` with an explicit `Host` header (Node's fetch
 * replaces the Host header and does not resolve `*.localhost`). Rejects after `timeoutMs`.
 */
export function sendRequest(
  port: number,
  method: string,
  path: string,
  options: { host?: string; headers?: Record<string, string>; body?: unknown; raw?: { body: string; type: string }; timeoutMs?: number } = {},
): Promise<HttpResponse> {
  // `raw`: a body sent as it is, with its own media type (an import's CSV); `body`: JSON.
  const payload = options.raw ? options.raw.body : options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    host: options.host ?? `127.0.0.1:${port}`,
    ...(payload === undefined ? {} : { 'content-type': options.raw?.type ?? 'application/json' }),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, headers, signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
