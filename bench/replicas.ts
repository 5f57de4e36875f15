/*
 * Replicas behind a load balancer (docs/contract.md Part B, "Running several replicas"): the same
 * scenarios through a real HAProxy (the configuration of docs/operations.md) in front of one
 * replica, and in front of three replicas on the same PostgreSQL, in the same run, so the
 * ratio says what adding replicas buys on this machine; and three replicas with REDIS_URL and
 * the limits on (set high enough never to refuse), which is what sharing them costs.
 */
import { freePort } from '../harness/free-port.ts';
import { startHaproxy, type Haproxy } from '../harness/haproxy.ts';
import { startRedisServer, type RedisServer } from '../harness/redis-server.ts';
import { runHttpLoad, type HttpRequestSpec } from './http-load.ts';
import { sampleOwnCpu, sampleUsage, type ServerHandle, type Usage } from './processes.ts';
import type { ReportRow, ReportSection } from './report.ts';
import type { SectionBench } from './section-bench.ts';

/** A scenario measured through the balancer. */
export interface ReplicaScenario {
  readonly scenario: string;
  readonly next: () => HttpRequestSpec;
}

/** What {@link measureReplicas} needs from the benchmark run. */
export interface ReplicaBench extends SectionBench {
  /** The postmaster's pid, for the database's CPU. */
  readonly databasePid: number;
  readonly scenarios: readonly ReplicaScenario[];
}

/** CPU summed over processes, resident memory of the largest one. */
function combine(usages: readonly Usage[]): Usage {
  return {
    cpuPercent: usages.reduce((sum, u) => sum + u.cpuPercent, 0),
    maxRssBytes: Math.max(...usages.map((u) => u.maxRssBytes)),
    totalRssBytes: usages.reduce((sum, u) => sum + u.totalRssBytes, 0),
  };
}

async function measureThrough(bench: ReplicaBench, haproxy: Haproxy, servers: readonly ServerHandle[], next: () => HttpRequestSpec) {
  const load = { port: haproxy.port, connections: bench.connections, next };
  await runHttpLoad({ ...load, seconds: bench.warmupSeconds });
  const serverUsage = servers.map((s) => sampleUsage(s.pid));
  const balancerUsage = sampleUsage(haproxy.pid);
  const databaseUsage = sampleUsage(bench.databasePid);
  const client = sampleOwnCpu();
  const measured = await runHttpLoad({ ...load, seconds: bench.seconds });
  const clientUsage = client.stop();
  const balancer = balancerUsage.stop();
  return {
    measured,
    server: combine(serverUsage.map((u) => u.stop())),
    database: databaseUsage.stop(),
    // The balancer runs on the same cores as the load generator: its CPU is counted with it.
    client: { cpuPercent: clientUsage.cpuPercent + balancer.cpuPercent },
  };
}

/**
 * Starts three replicas and HAProxy in front of the first one, then of all three, and
 * measures every scenario both ways; then three replicas sharing their limits through a
 * redis-server. Server CPU and memory are summed over the replicas; HAProxy's CPU is added to
 * the load generator's. Stops everything it started.
 */
export async function measureReplicas(bench: ReplicaBench): Promise<ReportSection> {
  const started: ServerHandle[] = [];
  const balancers: Haproxy[] = [];
  let redis: RedisServer | undefined;
  const balance = async (servers: readonly ServerHandle[]) => {
    const haproxy = await startHaproxy({ port: await freePort(), servers: servers.map((s, i) => ({ name: `r${i + 1}`, port: s.port })) });
    balancers.push(haproxy);
    return haproxy;
  };
  const stopAll = async () => {
    for (const b of balancers.splice(0)) await b.stop();
    for (const s of started.splice(0)) await s.stop();
  };
  try {
    for (let i = 0; i < 3; i += 1) started.push(await bench.start(bench.env));
    const one = await balance(started.slice(0, 1));
    const three = await balance(started);
    const rows: ReportRow[] = [];
    for (const s of bench.scenarios) {
      const single = { scenario: `${s.scenario}, HAProxy → 1 replica`, ...(await measureThrough(bench, one, started.slice(0, 1), s.next)) };
      bench.log(`${single.scenario}: ${single.measured.perSecond.toFixed(0)}/s`);
      const all = { scenario: `${s.scenario}, HAProxy → 3 replicas`, ...(await measureThrough(bench, three, started, s.next)) };
      bench.log(`${all.scenario}: ${all.measured.perSecond.toFixed(0)}/s`);
      rows.push(single, { ...all, baseline: { label: '1 replica', perSecond: single.measured.perSecond } });
    }
    await stopAll();

    // The limits on (never reached) and shared through Redis: one Redis round trip per request more.
    redis = await startRedisServer();
    const shared = { ...bench.env, REDIS_URL: redis.url, RATE_LIMIT_PER_KEY: '1000000', RATE_LIMIT_BURST: '1000000' };
    for (let i = 0; i < 3; i += 1) started.push(await bench.start(shared));
    const withRedis = await balance(started);
    const first = bench.scenarios[0]!;
    const limited = { scenario: `${first.scenario}, HAProxy → 3 replicas, REDIS_URL, limits on`, ...(await measureThrough(bench, withRedis, started, first.next)) };
    bench.log(`${limited.scenario}: ${limited.measured.perSecond.toFixed(0)}/s`);
    const without = rows[1]!;
    rows.push({ ...limited, baseline: { label: 'limits off', perSecond: without.measured!.perSecond } });
    return { title: 'PostgreSQL, replicas behind HAProxy (WORKERS=1 each)', rows };
  } finally {
    await stopAll();
    await redis?.stop();
  }
}
