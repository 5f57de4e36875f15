/*
 * What a highly available database costs writes (docs/contract.md Part B, "A highly available
 * database"; docs/operations.md, "PostgreSQL high availability"): `POST /users` against the
 * pg_auto_failover topology of the tests and docs (a primary and two standbys,
 * number_sync_standbys 1, so every commit waits for a standby) and, in the same run, against a
 * single pg_autoctl node (the same PostgreSQL settings, durable, no standby). With and without
 * an Idempotency-Key (with one, the key's claim, the change and the stored answer are one
 * transaction). The ratio is the price of synchronous commit on this machine: on one machine
 * the standby's round trip is a loopback one and the standbys share the cores, so it says more
 * about CPU than about the network latency a real deployment adds to every commit.
 */
import { randomUUID } from 'node:crypto';
import { startFormation, type Formation } from '../harness/pg-auto-failover.ts';
import { runHttpLoad, type HttpRequestSpec } from './http-load.ts';
import { sampleOwnCpu, sampleUsage, type ServerHandle, type Usage } from './processes.ts';
import type { ReportRow, ReportSection } from './report.ts';
import type { SectionBench } from './section-bench.ts';
import { addRequest } from './requests.ts';
import { seedProducts, seedWorkspaces, withSeedingClient, type SeededWorkspace } from './seed.ts';

/** What {@link measureFailover} needs from the benchmark run (`env` without DATABASE_URL). */
export type FailoverBench = SectionBench;

/** CPU summed over the data nodes' PostgreSQL processes, memory of the largest. */
function databaseUsage(formation: Formation): { stop(): Usage } {
  const samplers = formation.nodes.flatMap((node) => {
    const pid = formation.postmasterPid(node);
    return pid ? [sampleUsage(pid)] : [];
  });
  return {
    stop() {
      const usages = samplers.map((s) => s.stop());
      return {
        cpuPercent: usages.reduce((sum, u) => sum + u.cpuPercent, 0),
        maxRssBytes: Math.max(0, ...usages.map((u) => u.maxRssBytes)),
        totalRssBytes: usages.reduce((sum, u) => sum + u.totalRssBytes, 0),
      };
    },
  };
}

/** `POST /users` with a new Idempotency-Key each time. */
function keyedAddRequest(ws: SeededWorkspace): HttpRequestSpec {
  const request = addRequest(ws);
  return { ...request, headers: { ...request.headers, 'idempotency-key': randomUUID() } };
}

async function measure(bench: FailoverBench, formation: Formation, server: ServerHandle, scenario: string, next: () => HttpRequestSpec): Promise<ReportRow> {
  const load = { port: server.port, connections: bench.connections, next };
  await runHttpLoad({ ...load, seconds: bench.warmupSeconds });
  const serverUsage = sampleUsage(server.pid);
  const database = databaseUsage(formation);
  const client = sampleOwnCpu();
  const measured = await runHttpLoad({ ...load, seconds: bench.seconds });
  const row = { scenario, measured, client: client.stop(), server: serverUsage.stop(), database: database.stop() };
  bench.log(`${scenario}: ${measured.perSecond.toFixed(0)}/s`);
  return row;
}

/**
 * Starts a single pg_autoctl node and measures adds through one server on it; stops both;
 * then the same on a primary with two synchronous standbys, reached through the multi-host
 * DATABASE_URL. Rows of the formation carry the single node's rate as their baseline.
 */
export async function measureFailover(bench: FailoverBench): Promise<ReportSection> {
  const rows: ReportRow[] = [];
  const setups = [
    { label: 'single server', priorities: [50] },
    { label: 'primary + 2 synchronous standbys', priorities: [50, 50, 50] },
  ];
  const baselines = new Map<string, number>();
  for (const setup of setups) {
    const formation = await startFormation({ candidatePriorities: setup.priorities });
    let server: ServerHandle | undefined;
    try {
      const primary = formation.nodes[0]!;
      const [adds] = await withSeedingClient(`postgres://postgres@127.0.0.1:${primary.port}/wum`, async (run) => {
        await seedProducts(run);
        return seedWorkspaces(run, ['adds'], 1);
      });
      server = await bench.start({ ...bench.env, DATABASE_URL: formation.url });
      for (const [name, next] of [
        ['POST /users (unique emails)', () => addRequest(adds!)],
        ['POST /users with Idempotency-Key', () => keyedAddRequest(adds!)],
      ] as const) {
        const row = await measure(bench, formation, server, `${name}, ${setup.label}`, next);
        const baseline = baselines.get(name);
        if (baseline === undefined) baselines.set(name, row.measured!.perSecond);
        rows.push(baseline === undefined ? row : { ...row, baseline: { label: 'single server', perSecond: baseline } });
      }
    } finally {
      await server?.stop().catch(() => {});
      formation.stop();
    }
  }
  // Baseline rows first, then the formation's with their ratios.
  return {
    title: 'PostgreSQL under pg_auto_failover (durable: fsync and synchronous_commit on; DATABASE_URL with every node)',
    rows: [rows[0]!, rows[2]!, rows[1]!, rows[3]!],
  };
}
