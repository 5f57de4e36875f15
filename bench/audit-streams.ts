/*
 * Audit streams keep up (docs/performance.md, "Audit streams"; docs/api.md, "Audit streams"):
 * one stream of each destination type, every receiver real and on 127.0.0.1 — JSON Lines over
 * TLS with a self-signed certificate (`https`), a Splunk HEC over TLS (`splunk_hec`), s3rver
 * (`s3`) and Debian's rsyslog over TLS (`syslog`). Two measures on one server:
 *
 * - `POST /users` as fast as answers come, without a stream and then with the four, in the same
 *   run (goal ≥ 0.9×): the streams' reading and sending beside the requests;
 * - changes (`POST /users` and `PATCH /users/{email}`, one audit row each) paced at a fixed rate,
 *   and per destination the lag from each audit row's `occurred_at` to its first arrival at the
 *   receiver: p50, p99, max, and how many of the window's rows arrived (all must; goal p99 ≤ 2 s);
 * - import jobs of `rate` users started each second for the paced window's length (one audit row
 *   each, written in set-based batches), the way a customer base arrives and the way a 2-core
 *   machine writes 1,000 audited changes a second (one request per change tops out below that
 *   here): the rate of audit rows they wrote, and the same lag per destination over their rows.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { CreateBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { withClient } from '../harness/postgres-cluster.ts';
import { startRsyslog, type RsyslogReceiver } from '../harness/rsyslog-receiver.ts';
import { sendRequest } from '../harness/server-process.ts';
import { selfSignedCertificate, startJsonLinesReceiver, startSplunkHecReceiver, type StreamReceiver } from '../harness/stream-receivers.ts';
import { runHttpLoad, type HttpRequestSpec } from './http-load.ts';
import { LatencyRecorder, type Measurement } from './measurement.ts';
import { sampleOwnCpu, sampleUsage, type ServerHandle } from './processes.ts';
import type { ReportRow, ReportSection } from './report.ts';
import { addRequest, patchRequest } from './requests.ts';
import { createClient, type WumClient } from '../sdk/index.ts';
import { seededEmail, type SeededWorkspace } from './seed.ts';
import type { SectionBench } from './section-bench.ts';

/** What {@link measureAuditStreams} needs from the benchmark run. */
export interface AuditStreamsBench extends SectionBench {
  /** The PostgreSQL database the servers use: the window's audit ids are read from it. */
  readonly databaseUrl: string;
  /** The postmaster's pid, for the database's CPU. */
  readonly databasePid: number;
  /** The workspace written to; its seeded users are the ones `PATCH` renames. */
  readonly workspace: SeededWorkspace;
  /** Changes per second of the paced window, and its length in seconds. */
  readonly rate: number;
  readonly pacedSeconds: number;
  /** The streams' format (docs/api.md, "Audit streams"). */
  readonly format: 'json' | 'ocsf';
  /** Whether the last window is import jobs of `rate` users a second for `pacedSeconds`. */
  readonly importWindow: boolean;
}

/** Goals of docs/performance.md, "Audit streams". */
const LAG_P99_GOAL_MS = 2_000;
const RATIO_GOAL = 0.9;
/** Connections of the paced load: enough that each waits between requests at 1,000/s (autocannon paces per connection). */
const PACED_CONNECTIONS = 32;
/** The audited changes a second the streams are to keep up with (docs/performance.md, "Audit streams"). */
const CHANGES_GOAL = 1_000;
/** Longest wait for an import job to finish. */
const IMPORT_TIMEOUT_MS = 600_000;
/** Longest wait for the rows of a load to reach every receiver. */
const DRAIN_TIMEOUT_MS = 180_000;
const HEC_TOKEN = 'bench-hec-token-0123456789';
// s3rver's only key pair.
const S3_KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const BUCKET = 'audit';

/** The audit id and the `occurred_at` (ms) of one row as a receiver got it, in either format. */
function idAndTime(row: Record<string, unknown>): { id: number; occurredAt: number } {
  // json: the row as GET /audit-events shows it; ocsf: metadata.uid and time (ms).
  const metadata = row.metadata as { uid?: string } | undefined;
  return {
    id: typeof row.id === 'number' ? row.id : Number(metadata?.uid),
    occurredAt: typeof row.occurred_at === 'string' ? Date.parse(row.occurred_at) : Number(row.time),
  };
}

/** What one destination received: the first arrival of each audit id after `from`, and its batches. */
class Arrivals {
  /** Audit id → lag (ms) of its first arrival, for ids after {@link from}. */
  readonly lagOf = new Map<number, number>();
  from = 0;
  maxSeen = 0;
  batches = 0;
  rows = 0;
  largestBatch = 0;

  constructor(readonly name: string) {}

  /** Starts a window: only ids after `from` count, the batch counts start again. */
  reset(from: number): void {
    // Rows of the window may arrive while the window's start is being established (a request of
    // the warm-up still in flight takes its id after it): those after `from` are kept.
    for (const id of this.lagOf.keys()) if (id <= from) this.lagOf.delete(id);
    this.from = from;
    this.batches = 0;
    this.rows = 0;
    this.largestBatch = 0;
  }

  add(rows: ReadonlyArray<Record<string, unknown>>, at: number): void {
    this.batches += 1;
    this.rows += rows.length;
    this.largestBatch = Math.max(this.largestBatch, rows.length);
    for (const row of rows) {
      const { id, occurredAt } = idAndTime(row);
      // The stream's test send is a synthetic row 0.
      if (!(id > 0)) continue;
      this.maxSeen = Math.max(this.maxSeen, id);
      if (id > this.from && !this.lagOf.has(id)) this.lagOf.set(id, at - occurredAt);
    }
  }
}

/** Reads the lines rsyslog appends to `file` as they come (`<reception time>|<MSG>`); `close` lets the file go. */
function tailLines(file: string): { read: () => string[]; close: () => void } {
  let fd: number | undefined;
  let position = 0;
  let rest = '';
  const buffer = Buffer.alloc(1 << 20);
  // A read may end inside a character: the decoder keeps its first bytes for the next.
  const decoder = new StringDecoder('utf8');
  const read = () => {
    try {
      fd ??= openSync(file, 'r');
    } catch {
      return []; // rsyslog opens the file at its first message
    }
    const lines: string[] = [];
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, position);
      if (n === 0) break;
      position += n;
      const text = rest + decoder.write(buffer.subarray(0, n));
      const cut = text.lastIndexOf('\n');
      rest = text.slice(cut + 1);
      if (cut >= 0) lines.push(...text.slice(0, cut).split('\n'));
    }
    return lines;
  };
  return { read, close: () => fd !== undefined && closeSync(fd) };
}

/**
 * The four receivers, started on 127.0.0.1. Each stamps what it gets with its arrival time and
 * keeps it unread; {@link collect} reads it (after a window, and while waiting for a drain), so
 * that parsing what arrived stays out of the measured windows: a SIEM runs on its own machines,
 * these share wum's 2 cores. s3rver stores each object and rsyslog writes each line as they come.
 */
async function startDestinations() {
  const cert = selfSignedCertificate();
  const started: Array<() => Promise<void>> = [async () => cert.remove()];
  const stopAll = async () => {
    for (const stop of started.reverse()) await stop().catch(() => {});
  };
  try {
    const https = await startJsonLinesReceiver({ tls: cert, checkBodiesLater: true });
    started.push(() => https.close());
    const hec = await startSplunkHecReceiver(HEC_TOKEN, { tls: cert, checkBodiesLater: true });
    started.push(() => hec.close());
    const s3Dir = mkdtempSync(join(tmpdir(), 'wum-bench-s3-'));
    started.push(async () => rmSync(s3Dir, { recursive: true, force: true }));
    const s3 = new S3rver({ address: '127.0.0.1', port: 0, directory: s3Dir, silent: true });
    const s3Endpoint = `http://127.0.0.1:${(await s3.run()).port}`;
    started.push(() => s3.close());
    const reader = new S3Client({ endpoint: s3Endpoint, region: 'us-east-1', forcePathStyle: true, credentials: S3_KEYS });
    started.push(async () => reader.destroy());
    await reader.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const syslog: RsyslogReceiver = await startRsyslog({ arrivalsOnly: true });
    started.push(() => syslog.stop());

    const arrivals = { https: new Arrivals('https'), splunk_hec: new Arrivals('splunk_hec'), s3: new Arrivals('s3'), syslog: new Arrivals('syslog') };
    const fromHttp = (receiver: StreamReceiver, into: Arrivals) => {
      // Taken out when read, so that a window's batches are not kept past it.
      for (const batch of receiver.received.splice(0)) if (batch.status < 300) into.add(batch.rows, batch.at);
    };
    const syslogLines = tailLines(syslog.arrivalsFile);
    started.push(async () => syslogLines.close());
    const fromSyslog = () => {
      // rsyslog says when each message came, not which batch it was in.
      for (const line of syslogLines.read()) {
        const bar = line.indexOf('|');
        arrivals.syslog.add([JSON.parse(line.slice(bar + 1)) as Record<string, unknown>], Date.parse(line.slice(0, bar)));
      }
    };
    // s3rver announces each object once stored: timed at the announcement, read back when collected.
    const stored: Array<{ key: string; at: number }> = [];
    s3.on('event', (event) => {
      const record = event.Records[0]!;
      if (record.eventName.startsWith('ObjectCreated')) stored.push({ key: record.s3.object.key, at: Date.now() });
    });
    const fromS3 = async () => {
      for (const { key, at } of stored.splice(0)) {
        try {
          const object = await reader.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
          const text = gunzipSync(Buffer.from(await object.Body!.transformToByteArray())).toString('utf8');
          arrivals.s3.add(text.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>), at);
        } catch (error) {
          // An object that cannot be read back leaves its rows missing from the count, where they show.
          process.stderr.write(`s3: could not read ${key} back: ${(error as Error).message}\n`);
        }
      }
    };

    return {
      arrivals,
      /** Each destination as a stream's `destination` (credentials included). */
      destinations: {
        https: { type: 'https', url: https.url },
        splunk_hec: { type: 'splunk_hec', url: hec.url, token: HEC_TOKEN },
        s3: { type: 's3', endpoint: s3Endpoint, region: 'us-east-1', bucket: BUCKET, prefix: 'wum/', access_key_id: S3_KEYS.accessKeyId, secret_access_key: S3_KEYS.secretAccessKey },
        syslog: { type: 'syslog', host: '127.0.0.1', port: syslog.port, ca_certificate: syslog.caPem },
      },
      /** The server's environment for these receivers: loopback allowed, plain http for s3rver, the certificate trusted. */
      env: { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', WEBHOOK_ALLOW_HTTP: 'true', NODE_EXTRA_CA_CERTS: cert.certFile },
      /** rsyslog's process (outside this one, so not in the load generator's CPU), while it runs. */
      syslogPid: () => syslog.pid(),
      /** Reads what has arrived so far into {@link arrivals}. */
      async collect() {
        fromHttp(https, arrivals.https);
        fromHttp(hec, arrivals.splunk_hec);
        fromSyslog();
        await fromS3();
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

type Destinations = Awaited<ReturnType<typeof startDestinations>>;

/** The latest audit id of `workspaceId`, and those after `after` up to `through`, from the database. */
async function auditIds(url: string, workspaceId: number) {
  return {
    latest: () =>
      withClient(url, async (client) =>
        Number((await client.query<{ id: string | null }>('select max(id) as id from audit_events where workspace_id = $1', [workspaceId])).rows[0]!.id ?? 0),
      ),
    between: (after: number, through: number) =>
      withClient(url, async (client) =>
        (await client.query<{ id: string }>('select id from audit_events where workspace_id = $1 and id > $2 and id <= $3 order by id', [workspaceId, after, through])).rows.map(
          (r) => Number(r.id),
        ),
      ),
  };
}

/** The audit ids of the benchmark's workspace, read from the database. */
type AuditIds = Awaited<ReturnType<typeof auditIds>>;

/**
 * The lag row of one destination over the window's audit ids: the rate they arrived at, p50 and
 * p99 (max and the count in the label), the missing ones as errors, and how full its batches were.
 */
function lagRow(arrivals: Arrivals, window: readonly number[], seconds: number): ReportRow {
  const latencies = new LatencyRecorder(Math.max(1, window.length));
  let arrived = 0;
  let max = 0;
  for (const id of window) {
    const lag = arrivals.lagOf.get(id);
    if (lag === undefined) continue;
    arrived += 1;
    latencies.record(lag);
    max = Math.max(max, lag);
  }
  const missing = window.length - arrived;
  const measured: Measurement = {
    operations: arrived,
    seconds,
    perSecond: arrived / seconds,
    p50Ms: latencies.quantile(0.5),
    p99Ms: latencies.quantile(0.99),
    errors: missing,
    errorDetail: missing > 0 ? `missing×${missing}` : '',
  };
  // rsyslog records messages, not the batches they came in.
  const batches =
    arrivals.name === 'syslog' || arrivals.batches === 0
      ? ''
      : `; ${arrivals.batches} batches, ${(arrivals.rows / arrivals.batches).toFixed(0)} rows each on average, ${arrivals.largestBatch} at most`;
  return {
    scenario: `${arrivals.name}: occurred_at → arrival, rows/s (max ${max.toFixed(0)} ms; ${arrived} of ${window.length} rows arrived${batches})`,
    measured,
    target: { text: `p99 ≤ ${LAG_P99_GOAL_MS} ms, all arrived`, met: measured.p99Ms <= LAG_P99_GOAL_MS && missing === 0 },
  };
}

/** Waits until every destination has received audit id `through` (streams deliver in order); resolves with how long it took, in ms. */
async function drained(destinations: Destinations, through: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    await destinations.collect();
    const behind = Object.values(destinations.arrivals).filter((a) => a.maxSeen < through);
    if (behind.length === 0) return Date.now() - started;
    if (Date.now() - started > DRAIN_TIMEOUT_MS) {
      throw new Error(`audit rows still undelivered ${DRAIN_TIMEOUT_MS / 1000} s after the load: ${behind.map((a) => `${a.name} at ${a.maxSeen} of ${through}`).join(', ')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The import window: for `bench.pacedSeconds`, each second one import job of `bench.rate` new
 * users (JSON Lines, as `POST /users` takes them), through the SDK as a provisioning script
 * would, started on the second once the one before has completed; the streams are drained
 * first. The audit rows written a second, against {@link CHANGES_GOAL}, and each destination's
 * lag over them.
 * @throws Error when a job is refused, fails, or does not finish within {@link IMPORT_TIMEOUT_MS}.
 */
async function importWindow(bench: AuditStreamsBench, wum: WumClient, ids: AuditIds, destinations: Destinations): Promise<ReportRow[]> {
  const ws = bench.workspace;
  {
    const from = await ids.latest();
    await drained(destinations, from);
    for (const arrivals of Object.values(destinations.arrivals)) arrivals.reset(from);
    const started = performance.now();
    let late = 0;
    for (let second = 0; second < bench.pacedSeconds; second += 1) {
      const lines = Array.from({ length: bench.rate }, (_, i) =>
        JSON.stringify({ user: { email: `imported-${second}-${i}@${ws.subdomain}.bench.example`, role: 'non_owner', first_name: 'Imported', apps: [{ name: 'crm', role: 'member' }] } }),
      );
      const job = await wum.users.imports.create(lines.join('\n'), { format: 'ndjson' });
      for (let now = job; now.status !== 'completed'; now = await wum.users.imports.get(job.id)) {
        if (now.status === 'failed' || now.status === 'cancelled') throw new Error(`import job ${job.id} ended ${now.status}`);
        if (performance.now() - started > IMPORT_TIMEOUT_MS) throw new Error(`import job ${job.id} did not finish in time`);
        await sleep(20);
      }
      const wait = started + (second + 1) * 1000 - performance.now();
      if (wait > 0) await sleep(wait);
      else late += 1;
    }
    const seconds = (performance.now() - started) / 1000;
    const through = await ids.latest();
    const window = await ids.between(from, through);
    const perSecond = window.length / seconds;
    const drainMs = await drained(destinations, through);
    bench.log(`import jobs of ${bench.rate} users each second for ${bench.pacedSeconds} s (${late} ran past their second): ${window.length} audit rows in ${seconds.toFixed(1)} s (${perSecond.toFixed(0)}/s); all at every receiver ${(drainMs / 1000).toFixed(1)} s after the last job`);
    return [
      {
        scenario: `import jobs of ${bench.rate} users (JSON Lines, SDK; one audit row each), one a second for ${bench.pacedSeconds} s`,
        note: `${perSecond.toFixed(0)} audit rows/s (${window.length} in ${seconds.toFixed(1)} s; ${late} of ${bench.pacedSeconds} jobs ran past their second)`,
        target: { text: `≥ ${Math.round(0.95 * CHANGES_GOAL)} audited changes/s`, met: perSecond >= 0.95 * CHANGES_GOAL },
      },
      ...Object.values(destinations.arrivals).map((arrivals) => lagRow(arrivals, window, seconds)),
    ];
  }
}

/**
 * Starts one server with streams to the four receivers, measures `POST /users` without and with
 * the streams, then the paced window's lag per destination; stops what it started.
 * @throws Error when a receiver cannot start, a stream's test send fails, or rows never arrive.
 */
export async function measureAuditStreams(bench: AuditStreamsBench): Promise<ReportSection> {
  const destinations = await startDestinations();
  let server: ServerHandle | undefined;
  let wum: WumClient | undefined;
  try {
    server = await bench.start({ ...bench.env, ...destinations.env });
    const port = server.port;
    const ws = bench.workspace;
    wum = createClient({ baseUrl: `http://${ws.subdomain}.localhost:${port}`, apiKey: ws.apiKey, timeoutMs: IMPORT_TIMEOUT_MS });
    const ids = await auditIds(bench.databaseUrl, ws.id);

    /** Warms up, runs `beforeWindow`, then measures a window of `seconds`, sampling the server's and the database's CPU. */
    const measure = async (next: () => HttpRequestSpec, seconds: number, paced?: { rate: number; connections: number }, beforeWindow?: () => Promise<void>) => {
      const load = { port, connections: paced?.connections ?? bench.connections, next, ...(paced ? { overallRate: paced.rate } : {}) };
      await runHttpLoad({ ...load, seconds: bench.warmupSeconds });
      await beforeWindow?.();
      const serverUsage = sampleUsage(server!.pid);
      const databaseUsage = sampleUsage(bench.databasePid);
      const syslogPid = destinations.syslogPid();
      const syslogUsage = syslogPid === undefined ? undefined : sampleUsage(syslogPid);
      const client = sampleOwnCpu();
      const measured = await runHttpLoad({ ...load, seconds });
      const rsyslogPercent = syslogUsage?.stop().cpuPercent ?? Number.NaN;
      return { measured, server: serverUsage.stop(), database: databaseUsage.stop(), client: client.stop(), rsyslogPercent };
    };
    const add = () => addRequest(ws);
    const rows: ReportRow[] = [];

    // Turns: a warm-up (not measured: a fresh server is at its slowest), then none, with, with,
    // none (the streams paused: a paused stream costs nothing). Each side's turns sit as far
    // into the run on average, so a server that gets faster or slower as the run goes on favours
    // neither (none, with, none, with gave the streams the later, warmer minutes); the ratio is
    // of the two sides' mean rates.
    const streamingTurns = [false, true, true, false];
    const streamIds: string[] = [];
    const turns: Array<Awaited<ReturnType<typeof measure>>> = [];
    const backlogs: number[] = [];
    const drainAll = async () =>
      drained(destinations, await ids.latest()).catch((error: Error) => {
        bench.log(error.message);
        return Number.NaN;
      });
    await runHttpLoad({ port, connections: bench.connections, next: add, seconds: bench.seconds });
    for (const [turn, streaming] of streamingTurns.entries()) {
      if (turn === 1) {
        for (const [type, destination] of Object.entries(destinations.destinations)) {
          const created = await wum.auditStreams.create({ name: `bench ${type}`, format: bench.format, destination: destination as Parameters<WumClient['auditStreams']['create']>[0]['destination'] });
          const tested = await wum.auditStreams.test(created.id);
          if (!tested.ok) throw new Error(`the ${type} stream's test send failed: ${JSON.stringify(tested)}`);
          streamIds.push(created.id);
        }
      } else if (turn === 3) {
        for (const id of streamIds) await wum.auditStreams.pause(id);
      }
      const measured = await measure(add, bench.seconds);
      if (streaming) backlogs.push(await drainAll());
      turns.push(measured);
      bench.log(`POST /users, turn ${turn + 1}, ${streaming ? '4 audit streams' : 'no stream sending'}: ${measured.measured.perSecond.toFixed(0)}/s`);
    }
    // The paced window measures the streams' lag: they send again, their backlog first.
    for (const id of streamIds) await wum.auditStreams.resume(id);
    await drainAll();
    const mean = (of: typeof turns) => of.reduce((sum, t) => sum + t.measured.perSecond, 0) / of.length;
    const noneRate = mean(turns.filter((_, i) => !streamingTurns[i]));
    const withRate = mean(turns.filter((_, i) => streamingTurns[i]));
    const ratio = withRate / noneRate;
    turns.forEach(({ rsyslogPercent, ...t }, i) =>
      rows.push({
        scenario: `POST /users, turn ${i + 1}: ${streamingTurns[i] ? '4 audit streams' : 'no stream sending'} (${bench.connections} connections; rsyslog ${rsyslogPercent.toFixed(0)} % of a core)`,
        ...t,
      }),
    );
    rows.push({
      scenario: 'POST /users with 4 audit streams ÷ none, mean of two turns each',
      note: `${withRate.toFixed(0)} / ${noneRate.toFixed(0)} req/s = ${ratio.toFixed(2)}×`,
      target: { text: `≥ ${RATIO_GOAL}×`, met: ratio >= RATIO_GOAL && turns.every((t) => t.measured.errors === 0) },
    });
    rows.push({ scenario: 'rows of the full-speed turns with streams: all at every receiver', note: backlogs.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(' and ') + ' after each ended' });

    // Paced: adds and renames alternate, each one audit row; the warm-up's rows are delivered before the window opens.
    let turn = 0;
    const change = (): HttpRequestSpec => {
      turn += 1;
      return turn % 2 === 0 ? add() : patchRequest(ws, seededEmail(ws.subdomain, 2 + Math.floor(Math.random() * (ws.users - 1))));
    };
    let windowFrom = 0;
    const paced = await measure(change, bench.pacedSeconds, { rate: bench.rate, connections: PACED_CONNECTIONS }, async () => {
      windowFrom = await ids.latest();
      await drained(destinations, windowFrom);
      for (const arrivals of Object.values(destinations.arrivals)) arrivals.reset(windowFrom);
    });
    const through = await ids.latest();
    // Evidence of a stream falling behind: its rows not yet delivered when the load stopped.
    const lagRows = (await sendRequest(port, 'GET', '/metrics')).body.split('\n').filter((line) => line.startsWith('wum_audit_stream_lag_rows{'));
    bench.log(`when the paced load ended: ${lagRows.join('; ')}`);
    const drainMs = await drained(destinations, through).catch((error: Error) => {
      bench.log(error.message);
      return Number.NaN;
    });
    const window = await ids.between(windowFrom, through);
    const { rsyslogPercent, ...pacedUsage } = paced;
    const pacedRow: ReportRow = {
      scenario: `paced changes (POST /users and PATCH /users/{email}, one audit row each) at ${bench.rate}/s, ${PACED_CONNECTIONS} connections, ${bench.pacedSeconds} s (rsyslog ${rsyslogPercent.toFixed(0)} % of a core)`,
      ...pacedUsage,
      target: { text: `≥ ${Math.round(0.95 * bench.rate)}/s reached`, met: paced.measured.perSecond >= 0.95 * bench.rate && paced.measured.errors === 0 },
    };
    rows.push(pacedRow);
    bench.log(`paced at ${bench.rate}/s: ${paced.measured.perSecond.toFixed(0)}/s reached, ${window.length} audit rows in the window; all at every receiver ${(drainMs / 1000).toFixed(1)} s after the load`);
    for (const arrivals of Object.values(destinations.arrivals)) rows.push(lagRow(arrivals, window, paced.measured.seconds));
    if (bench.importWindow) rows.push(...(await importWindow(bench, wum, ids, destinations)));
    return { title: `Audit streams (PostgreSQL, ${bench.format}, one stream of each type, receivers on 127.0.0.1)`, rows };
  } finally {
    await wum?.close();
    await server?.stop();
    await destinations.stop();
  }
}
