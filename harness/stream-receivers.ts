import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Receivers of audit streams for tests and the audit streams benchmark, on 127.0.0.1: one for `https` destinations (JSON Lines,
 * signed) and a Splunk HTTP Event Collector that checks the protocol strictly (the path, the
 * `Authorization: Splunk <token>` header, the body as a run of event objects with `time`,
 * `host`, `source`, `sourcetype` and `event`) and answers as Splunk does. Either can serve TLS
 * with a self-signed certificate for 127.0.0.1 ({@link selfSignedCertificate}).
 */

/** A key and a self-signed certificate for `IP:127.0.0.1`, and the file holding the certificate (for `NODE_EXTRA_CA_CERTS`). */
export interface TestCertificate {
  readonly key: string;
  readonly cert: string;
  readonly certFile: string;
  remove(): void;
}

/** Makes a P-256 key and a one-day self-signed certificate for 127.0.0.1 with Debian's `openssl`. */
export function selfSignedCertificate(): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'wum-stream-tls-'));
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  const made = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyFile, '-out', certFile,
  ], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr}`);
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), certFile, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** One request a receiver got. */
export interface ReceivedBatch {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly status: number;
  /** When it arrived (`Date.now()`, once its body was read): the benchmark's lag ends here. */
  readonly at: number;
  /** The rows of an accepted batch (the lines of JSON Lines, or the HEC events' `event`). */
  readonly rows: ReadonlyArray<Record<string, unknown>>;
}

/** A running receiver. */
export interface StreamReceiver {
  /** `http(s)://127.0.0.1:<port>` and the path streams are pointed at (the HEC's base URL has none). */
  readonly url: string;
  readonly received: ReceivedBatch[];
  /** Rows of every accepted batch, in arrival order. */
  rows(): Array<Record<string, unknown>>;
  /** `true`: every request is refused (503), as a destination that is down. */
  down(refusing: boolean): void;
  /** Answers each next request only after `ms` (0: at once), so that batches could overlap if anything let them. */
  delay(ms: number): void;
  /** The most requests this receiver has had open at once. */
  peakInFlight(): number;
  close(): Promise<void>;
}

/** What a receiver answers: the status, the body, and the rows of an accepted batch. */
interface Outcome {
  readonly status: number;
  readonly answer: string;
  readonly rows: Array<Record<string, unknown>>;
}

/** How a receiver reads a request: what it checks of the request line and headers, and of the body. */
interface Protocol {
  /** An answer refusing the request by its path and headers, or undefined when they are right. */
  refuse(path: string, headers: IncomingHttpHeaders): Outcome | undefined;
  /** The body read: the rows and the success answer, or a refusal. */
  read(body: string): Outcome;
  /** The answer to a batch whose body is checked later ({@link ReceiverOptions.checkBodiesLater}). */
  readonly accepted: { readonly status: number; readonly answer: string };
}

/** Options of the receivers. */
export interface ReceiverOptions {
  /** Serve TLS with this certificate (plain HTTP without). */
  readonly tls?: TestCertificate;
  /**
   * Answer a request whose path and headers are right at once, and read its body only when its
   * rows are asked for (which then throws if the body was wrong). For the benchmark: a SIEM runs
   * on machines of its own, so the receivers keep their parsing out of the measured windows on
   * the 2 cores wum shares with them. Tests leave it off: a wrong body is refused, as the real receiver does.
   */
  readonly checkBodiesLater?: boolean;
}

async function startReceiver(protocol: Protocol, options: ReceiverOptions, path: string): Promise<StreamReceiver> {
  const { tls } = options;
  const received: ReceivedBatch[] = [];
  let refusing = false;
  let delayMs = 0;
  let inFlight = 0;
  let peak = 0;
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    res.on('close', () => (inFlight -= 1));
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => setTimeout(answer, delayMs));
    const answer = () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      const path = req.url ?? '';
      const refused = refusing
        ? { status: 503, answer: '{"text":"Server is busy","code":9}', rows: [] }
        : req.method === 'POST'
          ? protocol.refuse(path, req.headers)
          : { status: 405, answer: '', rows: [] };
      if (refused || !options.checkBodiesLater) {
        const outcome = refused ?? protocol.read(body);
        received.push({ path, headers: req.headers, body, status: outcome.status, at, rows: outcome.status < 300 ? outcome.rows : [] });
        res.writeHead(outcome.status, { 'content-type': 'application/json' }).end(outcome.answer);
        return;
      }
      let rows: Array<Record<string, unknown>> | undefined;
      received.push({
        path,
        headers: req.headers,
        body,
        status: protocol.accepted.status,
        at,
        get rows() {
          if (rows) return rows;
          const outcome = protocol.read(body);
          if (outcome.status >= 300) throw new Error(`a batch accepted unread at ${path} was wrong: ${outcome.status} ${outcome.answer}`);
          return (rows = outcome.rows);
        },
      });
      res.writeHead(protocol.accepted.status, { 'content-type': 'application/json' }).end(protocol.accepted.answer);
    };
  };
  const server = tls ? createHttpsServer({ key: tls.key, cert: tls.cert }, listener) : createHttpServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}${path}`,
    received,
    rows: () => received.flatMap((r) => r.rows),
    down: (value) => void (refusing = value),
    delay: (ms) => void (delayMs = ms),
    peakInFlight: () => peak,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A receiver of `https` stream batches at `/audit`: JSON Lines, answered 204. */
export function startJsonLinesReceiver(options: ReceiverOptions = {}): Promise<StreamReceiver> {
  const refused = { status: 400, answer: '', rows: [] };
  return startReceiver(
    {
      refuse: (path, headers) => (path !== '/audit' || headers['content-type'] !== 'application/x-ndjson' ? refused : undefined),
      read: (body) =>
        body.endsWith('\n') ? { status: 204, answer: '', rows: body.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>) } : refused,
      accepted: { status: 204, answer: '' },
    },
    options,
    '/audit',
  );
}

/**
 * Splits a HEC body into its JSON objects, which follow one another with optional whitespace
 * between (Splunk, "Format events for HTTP Event Collector", batching): undefined when it is not that.
 */
export function splitConcatenatedJson(body: string): unknown[] | undefined {
  const values: unknown[] = [];
  let depth = 0;
  let inString = false;
  let start = -1;
  for (let i = 0; i < body.length; i += 1) {
    const c = body[i]!;
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{') {
      if (depth === 0) start = i;
      depth += 1;
    } else if (c === '}') {
      depth -= 1;
      if (depth < 0) return undefined;
      if (depth === 0) {
        try {
          values.push(JSON.parse(body.slice(start, i + 1)));
        } catch {
          return undefined;
        }
      }
    } else if (depth === 0 && !/\s/.test(c)) return undefined;
  }
  return depth === 0 && values.length > 0 ? values : undefined;
}

/** A Splunk HEC with token `token`: only a well-formed batch to the event endpoint gets `200 {"text":"Success","code":0}`. */
export function startSplunkHecReceiver(token: string, options: ReceiverOptions = {}): Promise<StreamReceiver> {
  const answer = (status: number, text: string, code: number) => ({ status, answer: JSON.stringify({ text, code }), rows: [] });
  const success = '{"text":"Success","code":0}';
  return startReceiver(
    {
      refuse(path, headers) {
        if (path !== '/services/collector/event') return answer(404, 'The requested URL was not found on this server.', 404);
        if (headers.authorization === undefined) return answer(401, 'Token is required', 2);
        if (headers.authorization !== `Splunk ${token}`) return answer(403, 'Invalid token', 4);
        return undefined;
      },
      read: (body) => readHecEvents(body, success),
      accepted: { status: 200, answer: success },
    },
    options,
    '',
  );
}

/** The rows of a HEC batch body, each event checked as Splunk checks it, or Splunk's refusal. */
function readHecEvents(body: string, success: string): Outcome {
  const events = splitConcatenatedJson(body);
  if (!events) return { status: 400, answer: JSON.stringify({ text: 'Invalid data format', code: 6 }), rows: [] };
  const rows: Array<Record<string, unknown>> = [];
  for (const [index, event] of events.entries()) {
    const e = event as Record<string, unknown>;
    const wellFormed =
      typeof e.time === 'number' && typeof e.host === 'string' && e.source === 'wum' && e.sourcetype === 'wum:audit' &&
      typeof e.event === 'object' && e.event !== null && Object.keys(e).every((k) => ['time', 'host', 'source', 'sourcetype', 'event'].includes(k));
    if (!wellFormed) return { status: 400, answer: JSON.stringify({ text: 'Invalid data format', code: 6, 'invalid-event-number': index }), rows: [] };
    rows.push(e.event as Record<string, unknown>);
  }
  return { status: 200, answer: success, rows };
}
