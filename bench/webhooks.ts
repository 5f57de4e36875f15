/*
 * Webhooks (docs/contract.md Part B, Events and webhooks): what delivering costs the writes, and how
 * soon an event reaches its receiver. `POST /users` with one and with three webhook endpoints
 * against none, on the same server and data in the same run, the three rows taken in turn twice so that
 * none is measured on fresher tables than the others (goals ≥ 0.9× and ≥ 0.85×: the delivery rows
 * are written by the change's own statement, the sending happens beside the requests); and the
 * event-to-delivery latency to a local receiver while changes come at 500 per second (goal
 * p99 ≤ 1 s, and the paced load must reach 98 % of that rate), measured from each event's `created_at` to its arrival.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendRequest } from '../harness/server-process.ts';
import { runHttpLoad, type HttpRequestSpec } from './http-load.ts';
import { LatencyRecorder, type Measurement } from './measurement.ts';
import { sampleOwnCpu, sampleUsage, type Usage } from './processes.ts';
import { openStatementStats } from './statement-stats.ts';
import type { ReportRow, ReportSection } from './report.ts';
import type { SectionBench } from './section-bench.ts';

/** What {@link measureWebhooks} needs from the benchmark run (the admin token and http receivers are added to `env`). */
export interface WebhookBench extends SectionBench {
  /** The postmaster's pid, for the database's CPU. */
  readonly databasePid: number;
  /** The workspace written to, and the `POST /users` of a new user in it. */
  readonly subdomain: string;
  readonly add: () => HttpRequestSpec;
  /**
   * Deliveries sent by a second server process that gets no requests (`WEBHOOK_WORKER=false`
   * on the one the requests go to: docs/operations.md, "Webhooks and the event feed"); the rows' server CPU is
   * then both processes'.
   */
  readonly workerProcess?: boolean;
  /** Print what each statement cost per change in each endpoint row (the cluster loads `pg_stat_statements`). */
  readonly statementStats?: boolean;
  /**
   * How many times the three rows (none, one, three endpoints) are taken in turn (default 2):
   * each row's figures are over all its turns, so no row gains from coming first.
   */
  readonly turns?: number;
}

/** Changes per second of the latency row (docs/performance.md). */
const LATENCY_RATE = 500;
/** The share of {@link LATENCY_RATE} the paced load must reach for its latency to count. */
const PACED_REACHED = 0.98;
/** `POST /users` with 1 and with 3 endpoints against none: the least ratio that meets the goal. */
const RATIO_GOALS = [
  { endpoints: 1, ratio: 0.9 },
  { endpoints: 3, ratio: 0.85 },
] as const;
const ADMIN_TOKEN = 'bench-webhooks-admin-token-0123';

/** A local receiver answering 204, keeping each event's first arrival and its latency. */
async function startReceiver() {
  const seen = new Set<string>();
  let latencies = new LatencyRecorder();
  let arrivals = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(204).end();
      const id = String(req.headers['webhook-id']);
      const key = `${req.url} ${id}`;
      if (seen.has(key)) return;
      seen.add(key);
      arrivals += 1;
      const { created_at: createdAt } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { created_at: string };
      latencies.record(Date.now() - Date.parse(createdAt));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}/${path}`,
    /** Forgets the latencies so far; returns how many arrivals there were. */
    reset() {
      latencies = new LatencyRecorder();
      const n = arrivals;
      arrivals = 0;
      return n;
    },
    measured: () => ({ latencies, arrivals }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The usage of two processes together (CPU and resident sets added; the largest single one kept). */
function together(a: Usage, b: Usage): Usage {
  return { cpuPercent: a.cpuPercent + b.cpuPercent, maxRssBytes: Math.max(a.maxRssBytes, b.maxRssBytes), totalRssBytes: a.totalRssBytes + b.totalRssBytes };
}

/** One measured window: the load's figures and the CPU of the server(s), the database and this process. */
interface Window {
  readonly measured: Measurement;
  readonly server: Usage;
  readonly database: Usage;
  readonly client: { readonly cpuPercent: number };
}

/**
 * Windows of equal length as one: operations and seconds summed (so the rate is over all of
 * them), CPU averaged, the largest resident sets and p99 kept, the median of the p50s.
 */
function overTurns(windows: readonly Window[]): Window {
  const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const usage = (pick: (w: Window) => Usage): Usage => ({
    cpuPercent: mean(windows.map((w) => pick(w).cpuPercent)),
    maxRssBytes: Math.max(...windows.map((w) => pick(w).maxRssBytes)),
    totalRssBytes: Math.max(...windows.map((w) => pick(w).totalRssBytes)),
  });
  const operations = windows.reduce((sum, w) => sum + w.measured.operations, 0);
  const seconds = windows.reduce((sum, w) => sum + w.measured.seconds, 0);
  const p50s = windows.map((w) => w.measured.p50Ms).sort((a, b) => a - b);
  return {
    measured: {
      operations,
      seconds,
      perSecond: operations / seconds,
      p50Ms: p50s[Math.floor(p50s.length / 2)]!,
      p99Ms: Math.max(...windows.map((w) => w.measured.p99Ms)),
      errors: windows.reduce((sum, w) => sum + w.measured.errors, 0),
      errorDetail: windows.map((w) => w.measured.errorDetail).filter(Boolean).join(', '),
    },
    server: usage((w) => w.server),
    database: usage((w) => w.database),
    client: { cpuPercent: mean(windows.map((w) => w.client.cpuPercent)) },
  };
}

/**
 * Starts one server (and with `workerProcess` a second one that only delivers), measures `POST /users` with 0, 1 and 3 endpoints, taken in
 * turn `turns` times (endpoints added and deleted between windows, the deliveries drained after each), each row over all its turns;
 * then the event-to-delivery latency at 500 changes per second with
 * one endpoint, with no backlog from the rows before (the pending deliveries are drained
 * between the paced warm-up and the measured window). Stops what it started.
 */
export async function measureWebhooks(bench: WebhookBench): Promise<ReportSection> {
  const receiver = await startReceiver();
  const env = { ...bench.env, ADMIN_TOKEN, WEBHOOK_ALLOW_HTTP: 'true' };
  const server = await bench.start(bench.workerProcess ? { ...env, WEBHOOK_WORKER: 'false' } : env);
  // The process whose worker sends (and whose /metrics counts the pending deliveries).
  const sender = bench.workerProcess ? await bench.start(env) : server;
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const endpoints: string[] = [];
  const addEndpoint = async () => {
    const res = await sendRequest(server.port, 'POST', `/admin/v1/workspaces/${bench.subdomain}/webhook-endpoints`, {
      headers: admin,
      body: { url: receiver.url(`e${endpoints.length + 1}`) },
    });
    if (res.status !== 201) throw new Error(`endpoint creation failed: ${res.status} ${res.body}`);
    endpoints.push((res.json() as { id: string }).id);
  };
  /** The sender's claims so far (`wum_webhook_claims_total`, found or not). */
  const claims = async () => {
    const metrics = (await sendRequest(sender.port, 'GET', '/metrics')).body;
    const count = (found: string) => Number(new RegExp(`^wum_webhook_claims_total\\{found="${found}"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0);
    return { found: count('true'), empty: count('false') };
  };
  /** Waits until no delivery is pending; resolves with how long that took, in ms. */
  const drained = async () => {
    const started = Date.now();
    for (;;) {
      const metrics = (await sendRequest(sender.port, 'GET', '/metrics')).body;
      if (/^wum_webhook_deliveries_pending 0$/m.test(metrics)) return Date.now() - started;
      if (Date.now() - started > 300_000) throw new Error('deliveries still pending after 5 minutes');
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  /** Warms up, runs `beforeWindow`, then measures the window. */
  const measure = async (rate?: number, beforeWindow?: () => Promise<void>) => {
    const load = { port: server.port, connections: bench.connections, next: bench.add, ...(rate ? { overallRate: rate } : {}) };
    await runHttpLoad({ ...load, seconds: bench.warmupSeconds });
    await beforeWindow?.();
    const serverUsage = sampleUsage(server.pid);
    const senderUsage = sender === server ? undefined : sampleUsage(sender.pid);
    const databaseUsage = sampleUsage(bench.databasePid);
    const client = sampleOwnCpu();
    const measured = await runHttpLoad({ ...load, seconds: bench.seconds });
    const requests = serverUsage.stop();
    return { measured, client: client.stop(), server: senderUsage ? together(requests, senderUsage.stop()) : requests, database: databaseUsage.stop() };
  };
  const statements = bench.statementStats ? await openStatementStats(bench.env.DATABASE_URL!) : undefined;
  const removeEndpoint = async () => {
    const id = endpoints.pop()!;
    const res = await sendRequest(server.port, 'DELETE', `/admin/v1/workspaces/${bench.subdomain}/webhook-endpoints/${id}`, { headers: admin });
    if (res.status !== 204) throw new Error(`endpoint deletion failed: ${res.status} ${res.body}`);
  };
  try {
    const kinds = [{ endpoints: 0, goal: undefined }, ...RATIO_GOALS.map((g) => ({ endpoints: g.endpoints, goal: g.ratio }))];
    const windows = new Map<number, Window[]>(kinds.map((k) => [k.endpoints, []]));
    const label = (count: number) => (count === 0 ? 'POST /users, no webhook endpoint' : `POST /users, ${count} webhook endpoint${count > 1 ? 's' : ''}`);
    const turns = bench.turns ?? 2;
    for (let turn = 1; turn <= turns; turn += 1) {
      for (const { endpoints: count } of kinds) {
        while (endpoints.length < count) await addEndpoint();
        while (endpoints.length > count) await removeEndpoint();
        const claimsBefore = await claims();
        const window = await measure(undefined, statements?.reset);
        windows.get(count)!.push(window);
        if (statements && count > 0) {
          bench.log(`${label(count)}, turn ${turn}: PostgreSQL's statements in the window, per change`);
          await statements.print(window.measured.perSecond * window.measured.seconds, bench.log);
        }
        const drainMs = count > 0 ? await drained() : 0;
        const claimsAfter = await claims();
        // Per change of the window and its warm-up: how many claim statements the worker ran.
        const changes = (window.measured.perSecond * (bench.seconds + bench.warmupSeconds)) || 1;
        const perChange = (n: number) => (n / changes).toFixed(2);
        bench.log(
          `${label(count)}, turn ${turn}: ${window.measured.perSecond.toFixed(0)}/s` +
            (count > 0
              ? `, deliveries drained ${drainMs} ms after the load; claims per change ${perChange(claimsAfter.found - claimsBefore.found)} that found work, ` +
                `${perChange(claimsAfter.empty - claimsBefore.empty)} that found none`
              : ''),
        );
      }
    }
    const none = { scenario: label(0), ...overTurns(windows.get(0)!) };
    const rows: ReportRow[] = [none];
    const baseline = { label: 'no endpoint', perSecond: none.measured.perSecond };
    for (const { endpoints: count, goal } of kinds.slice(1)) {
      const row = { scenario: label(count), ...overTurns(windows.get(count)!) };
      const ratio = row.measured.perSecond / baseline.perSecond;
      bench.log(`${row.scenario}: ${row.measured.perSecond.toFixed(0)}/s over ${turns} turns, ${ratio.toFixed(2)}× none`);
      rows.push({ ...row, baseline, target: { text: `≥ ${goal}×`, met: ratio >= goal! && row.measured.errors === 0 } });
    }

    // Latency: one endpoint, changes paced at 500 per second.
    while (endpoints.length < 1) await addEndpoint();
    while (endpoints.length > 1) await removeEndpoint();
    await drained();
    // The warm-up's deliveries are sent and forgotten before the window; the window's are waited for.
    const windowed = await measure(LATENCY_RATE, async () => {
      await drained();
      receiver.reset();
    });
    await drained();
    const { latencies, arrivals } = receiver.measured();
    const delivery: Measurement = {
      operations: arrivals,
      seconds: windowed.measured.seconds,
      perSecond: arrivals / windowed.measured.seconds,
      p50Ms: latencies.quantile(0.5),
      p99Ms: latencies.quantile(0.99),
      errors: windowed.measured.errors,
      errorDetail: windowed.measured.errorDetail,
    };
    bench.log(`event → delivery at ${LATENCY_RATE}/s: p50 ${delivery.p50Ms.toFixed(0)} ms, p99 ${delivery.p99Ms.toFixed(0)} ms over ${arrivals} deliveries (${windowed.measured.perSecond.toFixed(0)} changes/s reached)`);
    rows.push({
      scenario: `event → delivery latency, 1 endpoint, ${LATENCY_RATE} changes/s (deliveries/s, latency of delivery)`,
      measured: delivery,
      server: windowed.server,
      database: windowed.database,
      target: {
        text: `p99 ≤ 1000 ms, ≥ ${PACED_REACHED * LATENCY_RATE} changes/s reached`,
        met: delivery.p99Ms <= 1000 && windowed.measured.perSecond >= PACED_REACHED * LATENCY_RATE && windowed.measured.errors === 0,
      },
    });
    const servers = bench.workerProcess ? 'a server for the requests and one that delivers' : 'one server';
    return { title: `Webhooks (PostgreSQL, ${servers}, local receiver)`, rows };
  } finally {
    await statements?.close();
    if (sender !== server) await sender.stop();
    await server.stop();
    await receiver.close();
  }
}
