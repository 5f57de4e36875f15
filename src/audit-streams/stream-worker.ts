import { Counter, Gauge, type Registry } from 'prom-client';
import { SYSTEM_ACTOR } from '../core/actor.ts';
import { joinDestination, type AuditStream, type StreamCredentials } from '../core/audit-streams/audit-stream.ts';
import { pauseFailingStreams, type StreamTestSend } from '../core/audit-streams/audit-streams-service.ts';
import type { ClaimedStream, StreamQueue } from '../core/audit-streams/stream-queue.ts';
import { createSettledHorizon } from '../core/audit-streams/settled-horizon.ts';
import { pickBatch, scanOf } from '../core/audit-streams/stream-batch.ts';
import type { Logger } from '../core/logger.ts';
import type { Store } from '../core/ports.ts';
import type { StreamedAuditEvent } from '../core/audit-streams/audit-stream-repository.ts';
import type { OutboundPolicy } from '../outbound/outbound-guard.ts';
import { retryDelayMs } from '../webhooks/retry-schedule.ts';
import { formatters } from './formatters.ts';
import { describeError } from './post-batch.ts';
import { StreamSendError, type StreamBatch } from './send-batch.ts';
import { sendBatch } from './senders.ts';

/** Settings of the stream worker. */
export interface StreamWorkerSettings {
  /** The outbound guard every send runs under. */
  readonly policy: OutboundPolicy;
  /** Longest a send may take, in ms. */
  readonly timeoutMs: number;
  /** How long a stream may fail before it is paused, in ms (`AUDIT_STREAM_PAUSE_AFTER`). */
  readonly pauseAfterMs: number;
}

/** Options of {@link startStreamWorker}. */
export interface StreamWorkerOptions {
  readonly queue: StreamQueue;
  readonly store: Store;
  readonly settings: StreamWorkerSettings;
  readonly log: Logger;
  readonly registry: Registry;
}

/** A running stream worker. */
export interface StreamWorker {
  /**
   * Pauses the streams failing for longer than `pauseAfterMs` (one check at a time); never
   * rejects. The caller runs it every {@link PAUSE_CHECK_MS} (the server's scheduler).
   */
  checkPauses(): Promise<void>;
  /** Stops claiming, waits for the batches in flight (each ends within the timeout). */
  stop(): Promise<void>;
}

/**
 * Most rows in one batch, by destination type (docs/api.md, "Audit streams"). A request to an
 * HTTP receiver stays well under the body limits collectors set (Splunk's HEC and most JSON
 * endpoints accept a few MB); an S3 object or a syslog connection costs the same whatever it
 * carries, so a stream that fell behind catches up in fewer, larger ones: at 500 rows, one
 * PUT or TLS handshake per 500 rows kept those two streams behind an import's 2,800 rows/s
 * (docs/performance.md, "Audit streams").
 */
export const BATCH_ROWS: { readonly [T in AuditStream['destination']['type']]: number } = {
  https: 500,
  splunk_hec: 500,
  s3: 5_000,
  syslog: 5_000,
};
/** How often the worker looks for streams with rows to send, in ms: rows wait at most about this long to leave. */
const POLL_MS = 250;
/** After a batch that was not full, how long a stream gathers rows before the next, in ms (batches of up to N rows or about 1 s). */
const GATHER_MS = 250;
/** Most streams one process sends at once. */
const MAX_STREAMS = 16;
/** How much longer than a send's timeout a claim holds, in ms (reading and recording take a moment too). */
const LEASE_MARGIN_MS = 10_000;
/** How often failing streams are checked against `AUDIT_STREAM_PAUSE_AFTER`, in ms (the pause comes within 10 s of the threshold). */
export const PAUSE_CHECK_MS = 2_000;
/** The backoff of a failing stream: 1 s doubling to 5 min, then every 5 min (with jitter), until it succeeds or is paused. */
const RETRY_SCHEDULE_MS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 300].map((s) => s * 1000);

/** The delay before the retry after `failures` failed sends in a row. */
export function streamRetryDelayMs(failures: number): number {
  return retryDelayMs(RETRY_SCHEDULE_MS, Math.min(Math.max(failures, 1), RETRY_SCHEDULE_MS.length))!;
}

type Lags = Awaited<ReturnType<StreamQueue['lags']>>;

/** A gauge of every stream's lag (`rows` or `seconds`), read from the database at scrape time. */
function lagGauge(registry: Registry, lags: () => Promise<Lags>, name: string, help: string, field: 'rows' | 'seconds') {
  return new Gauge({
    name,
    help,
    labelNames: ['stream', 'status'],
    registers: [registry],
    async collect() {
      try {
        const all = await lags();
        this.reset();
        for (const l of all) this.set({ stream: l.id, status: l.status }, l[field]);
      } catch {
        // Unknown while the database is away: keep the last values.
      }
    },
  });
}

function metrics(registry: Registry, queue: StreamQueue) {
  const lags = () => queue.lags();
  return {
    rows: new Counter({
      name: 'wum_audit_stream_rows_delivered_total',
      help: 'Audit rows delivered by audit streams (a row sent again after a failure or a replay counts again), by stream id.',
      labelNames: ['stream'],
      registers: [registry],
    }),
    failures: new Counter({
      name: 'wum_audit_stream_send_failures_total',
      help: 'Failed audit stream batches (refused, timed out, unreachable), by stream id.',
      labelNames: ['stream'],
      registers: [registry],
    }),
    paused: new Counter({
      name: 'wum_audit_streams_paused_total',
      help: 'Audit streams paused by the server because they kept failing for AUDIT_STREAM_PAUSE_AFTER.',
      registers: [registry],
    }),
    lagRows: lagGauge(registry, lags, 'wum_audit_stream_lag_rows', "Audit rows after a stream's cursor (not yet delivered), by stream id and status, counted at scrape time.", 'rows'),
    lagSeconds: lagGauge(registry, lags, 'wum_audit_stream_lag_seconds', 'Age of the oldest audit row a stream has not delivered, in seconds (0 when none), by stream id and status, at scrape time.', 'seconds'),
  };
}

/**
 * Each row's lines already written, by format and by whether the stream names each row's
 * workspace (the only things a line depends on besides its row): streams that share a read
 * write each row once. Weak, so the lines go with the rows.
 */
const written = new WeakMap<StreamedAuditEvent, Map<string, string>>();

/** The batch of `rows` of `stream`, each written in the stream's format. */
function batchOf(stream: AuditStream, rows: readonly StreamedAuditEvent[]): StreamBatch {
  const format = formatters[stream.format];
  if (!format) throw new StreamSendError(`the format ${stream.format} is not available on this server`);
  const kind = `${stream.format}:${stream.workspaceId === null ? 'all' : 'one'}`;
  const lineOf = (row: StreamedAuditEvent) => {
    let lines = written.get(row);
    if (!lines) written.set(row, (lines = new Map<string, string>()));
    let line = lines.get(kind);
    if (line === undefined) lines.set(kind, (line = format(row, stream)));
    return line;
  };
  return {
    streamId: stream.id,
    lines: rows.map(lineOf),
    firstAuditId: rows[0]!.id,
    lastAuditId: rows[rows.length - 1]!.id,
    occurredAt: rows.map((row) => row.occurredAt),
  };
}

/**
 * The test send of `POST …/audit-streams/{id}/test` (docs/api.md, "Audit streams"): one
 * synthetic row (`action` `audit_stream.test`, id 0) in the stream's format, sent now by the
 * stream's sender under the outbound guard; what the destination answered comes back.
 */
export function createStreamTestSend(settings: Pick<StreamWorkerSettings, 'policy' | 'timeoutMs'>): StreamTestSend {
  return async (stream, destination) => {
    const row: StreamedAuditEvent = {
      id: 0,
      workspaceId: stream.workspaceId,
      workspace: stream.workspace,
      occurredAt: new Date(),
      actor: SYSTEM_ACTOR,
      action: 'audit_stream.test',
      targetType: 'audit_stream',
      targetId: stream.id,
      userId: null,
      before: null,
      after: null,
    };
    try {
      await sendBatch(destination, batchOf(stream, [row]), { policy: settings.policy, timeoutMs: settings.timeoutMs });
      return { ok: true };
    } catch (error) {
      return { ok: false, error: error instanceof StreamSendError ? error.message : describeError(error) };
    }
  };
}

/**
 * Starts the audit stream worker of this process (docs/api.md, "Audit streams"; docs/operations.md,
 * "Audit streams"): every 250 ms (and at once after a full batch) it samples the audit ids for its
 * settled horizon (core/audit-streams/settled-horizon.ts), claims streams with rows after their
 * cursor up to that horizon (one process at a time per stream: `FOR UPDATE SKIP LOCKED`, then a
 * lease), reads the rows after each cursor in audit id order (once for the streams of a pass at
 * the same workspace and cursor), picks up to {@link BATCH_ROWS} of the destination's type
 * (core/audit-streams/stream-batch.ts), writes them in the stream's format, sends them with the destination type's
 * sender and, once accepted, moves the cursor in the statement that releases the claim (at least
 * once: a crash before that sends the batch again). A failed send keeps the cursor, marks the
 * stream `failing` and retries with backoff; {@link StreamWorker.checkPauses} pauses, audits
 * and counts the streams failing for longer than `pauseAfterMs`.
 */
export function startStreamWorker(options: StreamWorkerOptions): StreamWorker {
  const { queue, store, settings, log } = options;
  const m = metrics(options.registry, queue);
  const tasks = new Set<Promise<void>>();
  let stopping = false;
  let wakeUp: (() => void) | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => (wakeUp = undefined));

  /**
   * The reads of one pass's claims: one per workspace and cursor, as long as the longest scan
   * among the streams at it, so that streams in step (the usual case: claimed together, each
   * through the same horizon) read, parse and write each row once between them.
   */
  function sharedReads(claims: readonly ClaimedStream[], settledThrough: number): (stream: AuditStream) => Promise<StreamedAuditEvent[]> {
    const at = (stream: AuditStream) => `${stream.workspaceId ?? 'all'}:${stream.cursor}`;
    const scans = new Map<string, number>();
    for (const { stream } of claims) scans.set(at(stream), Math.max(scans.get(at(stream)) ?? 0, scanOf(BATCH_ROWS[stream.destination.type])));
    const reads = new Map<string, Promise<StreamedAuditEvent[]>>();
    return (stream) => {
      const key = at(stream);
      let read = reads.get(key);
      if (!read) reads.set(key, (read = queue.readRows(stream, scans.get(key)!, settledThrough)));
      return read;
    };
  }

  /** Sends one batch of the claimed stream; resolves true when it was full (more rows are waiting: look again at once). */
  async function deliver(claim: ClaimedStream, settledThrough: number, read: (stream: AuditStream) => Promise<StreamedAuditEvent[]>): Promise<boolean> {
    const { stream } = claim;
    const batchRows = BATCH_ROWS[stream.destination.type];
    const { rows, through } = pickBatch(await read(stream), stream, batchRows, settledThrough);
    if (rows.length === 0) {
      // Only rows of other actions (or none settled yet): the cursor moves past them, nothing is sent.
      if (through > stream.cursor) await queue.recordDelivered(claim, through, GATHER_MS, false);
      else await queue.release(claim, GATHER_MS);
      return false;
    }
    try {
      const credentials = JSON.parse(store.openSecret(claim.credentials)) as StreamCredentials;
      const destination = joinDestination(stream.destination, credentials);
      await sendBatch(destination, batchOf(stream, rows), { policy: settings.policy, timeoutMs: settings.timeoutMs });
    } catch (error) {
      const message = error instanceof StreamSendError ? error.message : describeError(error);
      m.failures.inc({ stream: stream.id });
      const retryInMs = streamRetryDelayMs(claim.failures + 1);
      log.warn({ stream: stream.id, error: message, retryInMs }, 'audit stream batch failed; retrying');
      await queue.recordFailed(claim, message, retryInMs);
      return false;
    }
    const full = rows.length === batchRows;
    if (await queue.recordDelivered(claim, through, full ? 0 : GATHER_MS, true)) {
      m.rows.inc({ stream: stream.id }, rows.length);
    }
    return full;
  }

  function run(claim: ClaimedStream, settledThrough: number, read: (stream: AuditStream) => Promise<StreamedAuditEvent[]>): void {
    const task = deliver(claim, settledThrough, read)
      .then((full) => {
        // A stream behind is due again at once; any other waits for the next pass.
        if (full) wakeUp?.();
      })
      .catch((err: unknown) => log.error({ err, stream: claim.stream.id }, 'could not send an audit stream batch'))
      .finally(() => tasks.delete(task));
    tasks.add(task);
  }

  const horizon = createSettledHorizon();
  async function loop(): Promise<void> {
    while (!stopping) {
      try {
        // Sampled on every pass, so that rows settle one pass after they commit.
        const sample = await queue.sampleAuditIds();
        const settledThrough = sample ? horizon.observe(sample) : 0;
        if (sample && tasks.size < MAX_STREAMS) {
          const claims = await queue.claimDue(MAX_STREAMS - tasks.size, settings.timeoutMs + LEASE_MARGIN_MS, settledThrough);
          const read = sharedReads(claims, settledThrough);
          for (const claim of claims) run(claim, settledThrough, read);
        }
      } catch (err) {
        if (stopping) return;
        log.warn({ err }, 'could not claim audit streams');
      }
      await sleep(POLL_MS);
    }
  }

  async function checkPauses(): Promise<void> {
    try {
      for (const stream of await pauseFailingStreams(store, settings.pauseAfterMs)) {
        m.paused.inc();
        log.warn({ stream: stream.id, failingSince: stream.failingSince, lastError: stream.lastError }, 'audit stream paused: it kept failing for AUDIT_STREAM_PAUSE_AFTER');
      }
    } catch (err) {
      log.warn({ err }, 'could not check failing audit streams');
    }
  }
  let pausing: Promise<void> | undefined;
  const checkPausesOnce = () => (pausing ??= checkPauses().finally(() => (pausing = undefined)));

  const running = loop();
  return {
    checkPauses: checkPausesOnce,
    async stop() {
      stopping = true;
      wakeUp?.();
      await running;
      await Promise.all(tasks);
      await pausing;
    },
  };
}
