import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDebianProgram } from './debian-programs.ts';

/** One wum replica behind the balancer. */
export interface Backend {
  readonly name: string;
  readonly port: number;
}

/** What {@link haproxyConfig} needs. */
export interface HaproxyOptions {
  /** Loopback port the balancer listens on. */
  readonly port: number;
  readonly servers: readonly Backend[];
  /** Health-check interval of each replica, in ms (docs/operations.md uses 2000). */
  readonly checkIntervalMs?: number;
}

/**
 * The HAProxy configuration of docs/operations.md ("Three replicas behind HAProxy"), on
 * loopback: health checks on `/readyz`, redispatch of retries to another replica, retries
 * only where the request cannot have run, and timeouts above wum's own.
 */
export function haproxyConfig(options: HaproxyOptions): string {
  const inter = options.checkIntervalMs ?? 2000;
  return [
    'global',
    '    maxconn 4096',
    '',
    'defaults',
    '    mode http',
    '    timeout connect 1s',
    '    timeout client 35s',
    '    timeout server 35s',
    '    timeout http-request 10s',
    '    timeout http-keep-alive 60s',
    '    timeout queue 5s',
    '    timeout check 3s',
    '    retries 3',
    '    option redispatch 1',
    '    retry-on conn-failure 503',
    '',
    'frontend api',
    `    bind 127.0.0.1:${options.port}`,
    '    http-request del-header X-Forwarded-For',
    '    option forwardfor',
    '    default_backend wum',
    '',
    'backend wum',
    '    balance roundrobin',
    '    option httpchk',
    '    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost',
    '    http-check expect status 200',
    `    default-server check inter ${inter} fall 2 rise 2 maxconn 64`,
    ...options.servers.map((s) => `    server ${s.name} 127.0.0.1:${s.port}`),
    '',
  ].join('\n');
}

/** A running HAProxy. */
export interface Haproxy {
  readonly port: number;
  /** Its process id (for CPU sampling). */
  readonly pid: number;
  /** The configuration it runs. */
  readonly config: string;
  /** Stops it (SIGTERM, then SIGKILL) and removes its files. */
  stop(): Promise<void>;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/**
 * Starts HAProxy (installing the Debian package `haproxy` when it is missing) in the
 * foreground with {@link haproxyConfig}, after checking the file with `haproxy -c`, and waits
 * until it accepts connections.
 * @throws Error with HAProxy's output when the configuration is refused or it does not start.
 */
export async function startHaproxy(options: HaproxyOptions): Promise<Haproxy> {
  ensureDebianProgram('haproxy', 'haproxy');
  const dir = mkdtempSync(join(tmpdir(), 'wum-haproxy-'));
  const file = join(dir, 'haproxy.cfg');
  const config = haproxyConfig(options);
  writeFileSync(file, config);
  const checked = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8' });
  if (checked.status !== 0) throw new Error(`haproxy refused its configuration:\n${checked.stdout}${checked.stderr}`);
  const child = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 20_000;
  while (!(await accepts(options.port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`haproxy did not start on port ${options.port}:\n${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port: options.port,
    pid: child.pid!,
    config,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
