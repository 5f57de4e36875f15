import { execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureDebianProgram } from './debian-programs.ts';
import { withClient } from './postgres-cluster.ts';
import { freePort } from './free-port.ts';

/*
 * A pg_auto_failover formation on one machine, for tests and benchmarks: a monitor and data
 * nodes, each a PostgreSQL data directory on a loopback port run by its own `pg_autoctl run`
 * (which supervises that node's postgres), all in one temporary directory. As root, every
 * pg_autoctl runs as the `postgres` user through runuser (PostgreSQL refuses root). The
 * layout and the monitor settings are those of docs/operations.md, "PostgreSQL high
 * availability" (one machine).
 */

/** The database the formation serves (pg_autoctl creates it on the primary). */
export const FORMATION_DATABASE = 'wum';

/**
 * Monitor settings that make a failover take seconds instead of the defaults' minute, for
 * tests on one machine (docs/operations.md lists them and what they trade).
 */
export const FAST_FAILOVER_SETTINGS: Readonly<Record<string, number>> = {
  'pgautofailover.health_check_period': 1000,
  'pgautofailover.health_check_timeout': 1000,
  'pgautofailover.health_check_max_retries': 1,
  'pgautofailover.health_check_retry_delay': 500,
  'pgautofailover.node_considered_unhealthy_timeout': 1000,
  'pgautofailover.primary_demote_timeout': 1000,
  'pgautofailover.startup_grace_period': 2000,
};

/** One data node of the formation. */
export interface FormationNode {
  readonly name: string;
  readonly port: number;
  readonly pgdata: string;
}

/** How to start a formation. */
export interface FormationOptions {
  /**
   * One entry per data node: its candidate priority (0 = never promoted, it only confirms
   * commits). Default three nodes of priority 50: the monitor sets `number_sync_standbys` to 1
   * once the second standby joins.
   */
  readonly candidatePriorities?: readonly number[];
  /** Longest wait for each step of the start, in ms. Default 180 000. */
  readonly timeoutMs?: number;
}

/** A node as the monitor sees it. */
export interface NodeState {
  readonly name: string;
  readonly port: number;
  readonly reportedState: string;
  readonly goalState: string;
}

/** A running formation and the operations a failover test needs. */
export interface Formation {
  /** `DATABASE_URL` of the formation: every node, `target_session_attrs=read-write`. */
  readonly url: string;
  /** Superuser URL of the monitor's database (`pg_auto_failover`). */
  readonly monitorUrl: string;
  readonly nodes: readonly FormationNode[];
  /** The nodes as the monitor reports them. */
  states(): Promise<NodeState[]>;
  /** `number_sync_standbys` of the formation, as the monitor has it. */
  numberSyncStandbys(): Promise<number>;
  /** The node whose reported and goal state are both `primary` (or `single`), if any. */
  primary(): Promise<FormationNode | undefined>;
  /** Resolves once `check(states)` holds; rejects after `timeoutMs` with the last states. */
  waitFor(description: string, check: (states: NodeState[]) => boolean, timeoutMs: number): Promise<void>;
  /**
   * Kills `node` as a machine dies: SIGKILL to its pg_autoctl process group (pg_autoctl, its
   * services and the postmaster) and to every process of that postmaster.
   */
  kill(node: FormationNode): void;
  /** Starts `pg_autoctl run` for `node` again (it rejoins as the monitor decides: a standby). */
  restart(node: FormationNode): void;
  /** The pid of `node`'s postmaster, when it runs. */
  postmasterPid(node: FormationNode): number | undefined;
  /** Kills every process of the formation and deletes its directory. */
  stop(): void;
}

const AS_ROOT = process.getuid?.() === 0;

function postgresIds(): { uid: number; gid: number } {
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  };
}

/** The command line that runs `args` as the PostgreSQL owner. */
function asOwner(args: string[]): [string, string[]] {
  return AS_ROOT ? ['runuser', ['-u', 'postgres', '--', ...args]] : [args[0]!, args.slice(1)];
}

function pidsOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (after the parenthesised command, which may hold spaces) is the parent pid.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) children.push(Number(entry));
    } catch {
      // The process ended meanwhile.
    }
  }
  return children;
}

function killQuietly(pid: number, group = false): void {
  try {
    process.kill(group ? -pid : pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/**
 * Starts a monitor and data nodes (the first becomes the primary; with two
 * standbys the monitor sets `number_sync_standbys` to 1 itself), on free loopback ports, with
 * {@link FAST_FAILOVER_SETTINGS} on the monitor, and waits until every standby is `secondary`.
 * Installs the Debian package `postgresql-15-auto-failover` when `pg_autoctl` is missing (as root).
 * @throws Error when pg_autoctl is unavailable or the formation does not settle in `timeoutMs`.
 */
export async function startFormation(options: FormationOptions = {}): Promise<Formation> {
  const candidatePriorities = options.candidatePriorities ?? [50, 50, 50];
  const nodeCount = candidatePriorities.length;
  const timeoutMs = options.timeoutMs ?? 180_000;
  ensureDebianProgram('pg_autoctl', 'postgresql-15-auto-failover');
  const pgctl = realpathSync(execFileSync('sh', ['-c', 'command -v pg_ctl']).toString().trim());
  const dir = mkdtempSync(join(tmpdir(), 'wum-paf-'));
  const ids = AS_ROOT ? postgresIds() : undefined;
  for (const sub of ['', 'config', 'share', 'run', 'logs']) {
    mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 });
    if (ids) chownSync(join(dir, sub), ids.uid, ids.gid);
  }
  // pg_autoctl keeps its configuration and state under the XDG directories: one set per formation.
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'share'),
    XDG_RUNTIME_DIR: join(dir, 'run'),
  };
  const groups = new Map<string, number>();
  /** Runs `args` (a `pg_autoctl … run` command) in the background, as the leader of its own process group. */
  const serve = (name: string, args: string[]) => {
    const [command, argv] = asOwner(args);
    const log = join(dir, 'logs', `${name}.log`);
    const child = spawn('sh', ['-c', `exec "$0" "$@" >> '${log}' 2>&1`, command, ...argv], { env, detached: true, stdio: 'ignore' });
    child.unref();
    groups.set(name, child.pid!);
  };

  const monitorPort = await freePort();
  const monitorData = join(dir, 'monitor');
  const monitorUrl = `postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover`;
  const nodes: FormationNode[] = [];
  const states = async (): Promise<NodeState[]> =>
    withClient(monitorUrl, async (client) => {
      const { rows } = await client.query<{ nodename: string; nodeport: number; reportedstate: string; goalstate: string }>(
        'select nodename, nodeport, reportedstate::text, goalstate::text from pgautofailover.node order by nodeid',
      );
      return rows.map((r) => ({ name: r.nodename, port: r.nodeport, reportedState: r.reportedstate, goalState: r.goalstate }));
    });
  const waitFor = async (description: string, check: (s: NodeState[]) => boolean, waitMs: number) => {
    const deadline = Date.now() + waitMs;
    let last: NodeState[] | string = 'no answer yet';
    while (Date.now() < deadline) {
      try {
        last = await states();
        if (check(last)) return;
      } catch (error) {
        last = (error as Error).message;
      }
      await sleep(200);
    }
    throw new Error(`pg_auto_failover: not ${description} within ${waitMs} ms: ${JSON.stringify(last)}\n${logTail()}`);
  };
  const logTail = () =>
    readdirSync(join(dir, 'logs'))
      .map((file) => `--- ${file} ---\n${readFileSync(join(dir, 'logs', file), 'utf8').split('\n').slice(-15).join('\n')}`)
      .join('\n');
  const postmasterOf = (pgdata: string): number | undefined => {
    try {
      return Number(readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return undefined;
    }
  };
  const killNode = (name: string, pgdata: string) => {
    const postmaster = postmasterOf(pgdata);
    const members = postmaster ? pidsOf(postmaster) : [];
    const group = groups.get(name);
    if (group) killQuietly(group, true);
    if (postmaster) killQuietly(postmaster);
    for (const pid of members) killQuietly(pid);
    groups.delete(name);
  };
  const stop = () => {
    for (const node of nodes) killNode(node.name, node.pgdata);
    killNode('monitor', monitorData);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const common = ['--hostname', '127.0.0.1', '--listen', '127.0.0.1', '--auth', 'trust', '--no-ssl', '--pgctl', pgctl];
    // `create … --run` creates the node, then serves it in the same process.
    serve('monitor', ['pg_autoctl', 'create', 'monitor', '--pgdata', monitorData, '--pgport', String(monitorPort), ...common, '--run']);
    await waitForMonitor(monitorUrl, timeoutMs);
    await withClient(monitorUrl, async (client) => {
      for (const [name, value] of Object.entries(FAST_FAILOVER_SETTINGS)) await client.query(`alter system set ${name} = ${value}`);
      await client.query('select pg_reload_conf()');
    });
    const monitor = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
    const create = (node: FormationNode, priority: number) =>
      serve(node.name, [
        'pg_autoctl', 'create', 'postgres', '--pgdata', node.pgdata, '--pgport', String(node.port), '--name', node.name,
        '--dbname', FORMATION_DATABASE, '--monitor', monitor, '--candidate-priority', String(priority), ...common, '--run',
      ]);
    for (let i = 1; i <= nodeCount; i += 1) nodes.push({ name: `node${i}`, port: await freePort(), pgdata: join(dir, `node${i}`) });
    // The first node becomes the primary; the standbys copy it one after the other (two base
    // backups at once make the second wait a long time).
    for (const [i, node] of nodes.entries()) {
      // pg_basebackup asks for a spread checkpoint: with the new primary's pages still dirty,
      // that takes minutes. A checkpoint now leaves it little to do.
      if (i > 0) await withClient(`postgres://postgres@127.0.0.1:${nodes[0]!.port}/postgres`, (client) => client.query('checkpoint'));
      create(node, candidatePriorities[i]!);
      const settled = i === 0 ? 'single' : 'secondary';
      await waitFor(`${node.name} ${settled}`, (s) => s.some((n) => n.name === node.name && n.reportedState === settled && n.goalState === settled), timeoutMs);
    }
    // One node alone stays `single` (no standby, no synchronous replication).
    const steady = nodeCount === 1 ? ['single'] : ['primary', 'secondary'];
    await waitFor('settled', (s) => s.length === nodeCount && s.every((n) => n.reportedState === n.goalState && steady.includes(n.reportedState)), timeoutMs);
  } catch (error) {
    const tail = existsLogs(dir) ? logTail() : '';
    stop();
    throw new Error(`${(error as Error).message}\n${tail}`, { cause: error });
  }

  const hostList = nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  return {
    url: `postgres://postgres@${hostList}/${FORMATION_DATABASE}?target_session_attrs=read-write`,
    monitorUrl,
    nodes,
    states,
    async numberSyncStandbys() {
      return withClient(monitorUrl, async (client) => {
        const { rows } = await client.query<{ n: number }>("select number_sync_standbys as n from pgautofailover.formation where formationid = 'default'");
        return rows[0]!.n;
      });
    },
    async primary() {
      const primary = (await states()).find((s) => ['primary', 'single'].includes(s.reportedState) && s.reportedState === s.goalState);
      return nodes.find((n) => n.name === primary?.name);
    },
    waitFor,
    kill: (node) => killNode(node.name, node.pgdata),
    restart: (node) => serve(node.name, ['pg_autoctl', 'run', '--pgdata', node.pgdata]),
    postmasterPid: (node) => postmasterOf(node.pgdata),
    stop,
  };
}

function existsLogs(dir: string): boolean {
  try {
    readdirSync(join(dir, 'logs'));
    return true;
  } catch {
    return false;
  }
}

async function waitForMonitor(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await withClient(url, (client) => client.query('select 1'));
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`the pg_auto_failover monitor did not start: ${(error as Error).message}`, { cause: error });
      await sleep(200);
    }
  }
}
