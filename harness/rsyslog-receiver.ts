import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './free-port.ts';

/*
 * Debian's rsyslog receiving RFC 5425 (syslog over TLS, GnuTLS driver) on 127.0.0.1, writing
 * what it receives to files, for the syslog audit stream tests and the audit streams benchmark. .ci/run installs rsyslog and
 * rsyslog-gnutls; a machine without them gets them here when the test runs as root.
 */

const RSYSLOGD = '/usr/sbin/rsyslogd';

/** True when rsyslogd and its GnuTLS network stream driver are installed. */
function installed(): boolean {
  if (!existsSync(RSYSLOGD)) return false;
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Status}', 'rsyslog-gnutls'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).endsWith('ok installed');
  } catch {
    return false;
  }
}

/**
 * Installs rsyslog and rsyslog-gnutls when missing (root only).
 * @throws Error saying what to install when it cannot.
 */
function ensureRsyslog(): void {
  if (installed()) return;
  if (process.getuid?.() !== 0) {
    throw new Error('rsyslog with its TLS driver is needed: apt-get install rsyslog rsyslog-gnutls (.ci/run installs them as root)');
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { env, stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'rsyslog', 'rsyslog-gnutls'], { env, stdio: 'ignore' });
  if (!installed()) throw new Error('apt-get install rsyslog rsyslog-gnutls did not install rsyslogd and its gtls driver');
}

/** A CA and, when `serverFor` is given, a server certificate it signed for that IP address. */
export interface TestCertificates {
  readonly caPem: string;
  readonly caFile: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

/** Makes a throw-away CA (P-256, one day) in `dir`, and a server certificate for `serverFor` (an IP address, in its subjectAltName) signed by it. */
export function makeCertificates(dir: string, name: string, serverFor?: string): TestCertificates {
  const path = (file: string) => join(dir, `${name}-${file}`);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', path('ca.key'), '-out', path('ca.pem'), '-days', '1', '-subj', `/CN=${name} test CA`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  const caPem = readFileSync(path('ca.pem'), 'utf8');
  if (serverFor === undefined) return { caPem, caFile: path('ca.pem') };
  openssl('req', ...ec, '-keyout', path('server.key'), '-out', path('server.csr'), '-subj', `/CN=${serverFor}`);
  writeFileSync(path('server.ext'), `subjectAltName=IP:${serverFor}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n`);
  openssl('x509', '-req', '-in', path('server.csr'), '-CA', path('ca.pem'), '-CAkey', path('ca.key'), '-CAcreateserial',
    '-days', '1', '-extfile', path('server.ext'), '-out', path('server.pem'));
  return { caPem, caFile: path('ca.pem'), certFile: path('server.pem'), keyFile: path('server.key') };
}

async function waitForListener(port: number, child: ChildProcess, errors: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`rsyslogd exited with ${child.exitCode}: ${errors()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await sleep(100);
  }
  throw new Error(`rsyslogd did not listen on 127.0.0.1:${port} within 15 s: ${errors()}`);
}

/** A running rsyslogd and what it received. */
export interface RsyslogReceiver {
  readonly port: number;
  /** The PEM of the CA that signed its certificate (for 127.0.0.1). */
  readonly caPem: string;
  /** The temporary directory, for more certificates. */
  readonly dir: string;
  /**
   * The file where each received message is a line `<reception time, RFC 3339 with µs>|<MSG>`:
   * rsyslog's own clock when the message came in, so that a reader polling the file adds no delay.
   */
  readonly arrivalsFile: string;
  /** The daemon's process id while it runs (for the benchmark's CPU sampling), undefined while down. */
  pid(): number | undefined;
  /** Each received message's MSG, one per line, once at least `count` have arrived (within 10 s). */
  messages(count: number): Promise<string[]>;
  /** Each received message's parsed header fields and MSG, `|`-separated, once at least `count` have arrived. */
  headers(count: number): Promise<string[]>;
  /** Stops the daemon and keeps its files: the port refuses connections until {@link RsyslogReceiver.up}. */
  down(): Promise<void>;
  /** Starts the daemon again on the same port, certificate and files. */
  up(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts rsyslogd in the foreground on a free port of 127.0.0.1, with imtcp on the GnuTLS
 * driver (TLS required, anonymous client), writing each message's MSG to one file, its
 * parsed RFC 5424 fields to another, and its arrival time with its MSG to a third. With
 * `arrivalsOnly` only the third is written (the benchmark: one file write per message, as a
 * SIEM's collector on its own machine would cost wum nothing); `messages` and `headers` then
 * stay empty.
 * @throws Error when rsyslog cannot be installed or does not start listening.
 */
export async function startRsyslog(options: { readonly arrivalsOnly?: boolean } = {}): Promise<RsyslogReceiver> {
  ensureRsyslog();
  const dir = mkdtempSync(join(tmpdir(), 'wum-rsyslog-'));
  const work = join(dir, 'work');
  mkdirSync(work);
  const certs = makeCertificates(dir, 'receiver', '127.0.0.1');
  const port = await freePort();
  const messagesFile = join(dir, 'messages.log');
  const headersFile = join(dir, 'headers.log');
  const arrivalsFile = join(dir, 'arrivals.log');
  const conf = join(dir, 'rsyslog.conf');
  writeFileSync(
    conf,
    `global(
  workDirectory="${work}"
  maxMessageSize="256k"
  defaultNetstreamDriver="gtls"
  defaultNetstreamDriverCAFile="${certs.caFile}"
  defaultNetstreamDriverCertFile="${certs.certFile}"
  defaultNetstreamDriverKeyFile="${certs.keyFile}"
)
module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")
input(type="imtcp" address="127.0.0.1" port="${port}")
template(name="msg" type="string" string="%msg%\\n")
template(name="fields" type="string" string="%pri%|%protocol-version%|%timereported:::date-rfc3339%|%hostname%|%app-name%|%procid%|%msgid%|%structured-data%|%msg%\\n")
template(name="arrival" type="string" string="%timegenerated:::date-rfc3339%|%msg%\\n")
${options.arrivalsOnly ? '' : `action(type="omfile" file="${messagesFile}" template="msg")
action(type="omfile" file="${headersFile}" template="fields")
`}action(type="omfile" file="${arrivalsFile}" template="arrival")
`,
  );
  let stderr = '';
  let child: ChildProcess | undefined;
  const launch = async () => {
    stderr = '';
    const started = spawn(RSYSLOGD, ['-n', '-f', conf, '-i', join(dir, 'rsyslogd.pid')], { stdio: ['ignore', 'pipe', 'pipe'] });
    started.stdout.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    started.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child = started;
    try {
      await waitForListener(port, started, () => stderr);
    } catch (error) {
      started.kill('SIGKILL');
      throw error;
    }
  };
  const halt = async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  };
  try {
    await launch();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const linesOf = async (file: string, count: number) => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(0, -1) : [];
      if (lines.length >= count || Date.now() > deadline) return lines;
      await sleep(50);
    }
  };
  return {
    port,
    caPem: certs.caPem,
    dir,
    arrivalsFile,
    pid: () => child?.pid,
    messages: (count) => linesOf(messagesFile, count),
    headers: (count) => linesOf(headersFile, count),
    down: halt,
    up: launch,
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
