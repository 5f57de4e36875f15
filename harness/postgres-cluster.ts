import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.ts';

/** A throw-away PostgreSQL server started for tests or benchmarks. */
export interface PostgresCluster {
  /** Superuser URL of the `postgres` database on 127.0.0.1. */
  readonly url: string;
  /** The same database through the server's Unix-domain socket. */
  readonly socketUrl: string;
  stop(): void;
}

function onPath(binary: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status === 0;
}

/** Options of {@link startPostgresCluster}. */
export interface ClusterOptions {
  /**
   * Loads `pg_stat_statements` with planning tracked (a benchmark's `--statements`), so that
   * `create extension pg_stat_statements` then gives each statement's calls, execution and
   * planning time.
   */
  readonly statementStats?: boolean;
}

/**
 * Starts a PostgreSQL cluster in a temporary directory on a free port, tuned for tests
 * (no fsync: the data is thrown away). PostgreSQL refuses to run as root, so as root the
 * server runs as the `postgres` user through runuser.
 * @returns undefined when no PostgreSQL server binaries are installed.
 */
export async function startPostgresCluster(options: ClusterOptions = {}): Promise<PostgresCluster | undefined> {
  if (!onPath('initdb') || !onPath('pg_ctl')) return undefined;
  const asRoot = process.getuid?.() === 0;
  const run = (command: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', command, ...args], { stdio: 'pipe' })
      : execFileSync(command, args, { stdio: 'pipe' });
  const dir = mkdtempSync(join(tmpdir(), 'wum-pg-'));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const dataDir = join(dir, 'data');
  const port = await freePort();
  run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C']);
  const settings = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=300',
    // Shared memory segments as files in the data directory, removed with it: POSIX segments
    // (the default) live in /dev/shm and outlast a server stopped with `-m immediate`.
    '-c dynamic_shared_memory_type=mmap',
    ...(options.statementStats ? ['-c shared_preload_libraries=pg_stat_statements', '-c pg_stat_statements.track_planning=on'] : []),
  ].join(' ');
  run('pg_ctl', ['-D', dataDir, '-o', settings, '-l', join(dir, 'server.log'), '-w', 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    socketUrl: `postgres://postgres@/postgres?host=${encodeURIComponent(dir)}&port=${port}`,
    stop() {
      try {
        run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Runs `work` with one `pg` client connected to `url`, and closes the client after. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A new, empty database on the TEST_DATABASE_URL server, and how to drop it. */
export interface PostgresDatabase {
  /** Connection URL of the new database. */
  readonly url: string;
  /** Drops the database, closing any connection left open to it. */
  drop(): Promise<void>;
}

function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) throw new Error('WUM_TEST_BACKEND=postgres needs TEST_DATABASE_URL');
  return withClient(serverUrl, work);
}

/**
 * Environment variable naming the migrated database `scripts/run-tests.ts` makes once on the
 * test server, which {@link createPostgresDatabase} copies with `{ migrated: true }`.
 */
export const TEST_PG_TEMPLATE_VARIABLE = 'WUM_TEST_PG_TEMPLATE';

/**
 * Creates a database with a unique name starting with `prefix` on the server of
 * TEST_DATABASE_URL: empty (no tables, not migrated), or with `migrated` a copy of the migrated
 * template database `npm test` made once (`CREATE DATABASE … TEMPLATE`, a file copy: no
 * migration runs per test), when there is one; else empty, and the open migrates it.
 */
export async function createPostgresDatabase(prefix = 'wum_test', options: { readonly migrated?: boolean } = {}): Promise<PostgresDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const template = options.migrated ? process.env[TEST_PG_TEMPLATE_VARIABLE] : undefined;
  await onServer((client) => client.query(`create database ${name}${template ? ` template ${template}` : ''}`));
  const url = new URL(process.env.TEST_DATABASE_URL!);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: () => onServer((client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}
