import { sql } from 'drizzle-orm';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { MaintenanceSettings } from '../config/load-config.ts';
import type { Database } from './database.ts';

/*
 * PGlite runs no autovacuum: its statistics never come and its dead rows are never reclaimed,
 * so plans that need statistics stay slow and the data directory grows. This task does what
 * autovacuum would, in the one process that owns the embedded database. PGlite's statistics
 * collector does count (pg_stat_user_tables.n_mod_since_analyze and n_dead_tup are filled),
 * so the task reads autovacuum's own inputs and applies its own thresholds. On PostgreSQL
 * autovacuum does the job and this task is not started.
 * Source: PostgreSQL "The Autovacuum Daemon" (routine-vacuuming.html#AUTOVACUUM):
 * vacuum threshold = autovacuum_vacuum_threshold + autovacuum_vacuum_scale_factor × reltuples,
 * analyze threshold = autovacuum_analyze_threshold + autovacuum_analyze_scale_factor × reltuples.
 * PGlite runs no checkpointer either, and a single-user backend never requests a checkpoint
 * for the WAL it wrote (PostgreSQL's XLogWrite asks for one only under a postmaster), so
 * `max_wal_size` alone bounds nothing: the WAL grew by every change until the process closed
 * the database. The task checkpoints when the checkpointer would: once the WAL written since
 * the last checkpoint's redo point passes max_wal_size / (1 + checkpoint_completion_target)
 * (PostgreSQL "WAL Configuration", CheckPointSegments in xlog.c), or checkpoint_timeout after
 * the last checkpoint when anything was written since.
 */

/** Autovacuum's `autovacuum_vacuum_threshold` and `autovacuum_analyze_threshold` (rows). */
export const BASE_THRESHOLD_ROWS = 50;

/**
 * The `default_statistics_target` of the store's own `ANALYZE` passes: a sample of 300 × this
 * rows a table. Every request waits for a pass on the one connection; at PostgreSQL's default
 * (100: 30,000 rows) a pass over `users`, `events` or `audit_events` took 270–310 ms once they
 * held 100,000 rows, and such passes made nearly every slow `GET /users` during an import.
 * The hot reads do not depend on statistics (docs/performance.md, "Fast on data as it
 * arrives"); the coarser ones still tell a large table from a small one.
 */
export const EMBEDDED_STATISTICS_TARGET = 10;

/** The logger the task writes to: one info line per pass. */
export interface MaintenanceLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link createEmbeddedMaintenance}. */
export interface MaintenanceOptions {
  readonly db: Database;
  readonly settings: MaintenanceSettings;
  readonly log: MaintenanceLog;
  /** Where the passes are counted and timed (the `/metrics` registry). */
  readonly registry?: Registry;
}

/** Table of a `checkpoint` pass, which covers every table. */
export const ALL_TABLES = '*';

/** One pass over one table (`vacuum` is `VACUUM`, then `ANALYZE`), or a checkpoint of the whole store. */
export interface MaintenancePass {
  /** The table, or {@link ALL_TABLES} for a checkpoint. */
  readonly table: string;
  readonly action: 'analyze' | 'vacuum' | 'checkpoint';
  /** Rows changed since the table's last analyze, and dead rows, when the pass was decided. */
  readonly modifiedRows: number;
  readonly deadRows: number;
  /** Checkpoint: bytes of WAL written since the previous checkpoint's redo point. */
  readonly walBytes?: number;
  readonly durationMs: number;
}

/** A running maintenance task. */
export interface EmbeddedMaintenance {
  /** Runs one step now (the most overdue table, if any) and resolves with what it did. */
  step(): Promise<MaintenancePass | undefined>;
  /** The delay before the next step after one that did `pass`, in ms: soon after work, else the interval. */
  delayAfter(pass: MaintenancePass | undefined): number;
  /** Stops: no step starts after this (it resolves with nothing); resolves when the one running (if any) has finished. */
  stop(): Promise<void>;
}

interface TableStats {
  relname: string;
  reltuples: number | string;
  n_mod_since_analyze: number | string;
  n_dead_tup: number | string;
}

/** A pass due on `table`, if any: vacuum first (it analyzes too), the largest overshoot first. */
export function duePass(table: TableStats, settings: MaintenanceSettings): { action: 'analyze' | 'vacuum'; overshoot: number } | undefined {
  // reltuples is -1 until the table was first analyzed or vacuumed: count it as empty.
  const tuples = Math.max(Number(table.reltuples), 0);
  const dead = Number(table.n_dead_tup);
  const modified = Number(table.n_mod_since_analyze);
  const vacuumAt = BASE_THRESHOLD_ROWS + settings.vacuumScaleFactor * tuples;
  const analyzeAt = BASE_THRESHOLD_ROWS + settings.analyzeScaleFactor * tuples;
  if (dead > vacuumAt) return { action: 'vacuum', overshoot: dead / vacuumAt };
  if (modified > analyzeAt) return { action: 'analyze', overshoot: modified / analyzeAt };
  return undefined;
}

interface WalState {
  /** Bytes of WAL since the last checkpoint's redo point. */
  wal_bytes: number | string;
  /** The checkpointer's threshold: max_wal_size / (1 + checkpoint_completion_target), in bytes. */
  due_bytes: number | string;
  /** Seconds since the last checkpoint, and checkpoint_timeout in seconds. */
  age_seconds: number | string;
  timeout_seconds: number | string;
}

/** True when the checkpointer would checkpoint now (see the comment at the top of this file). */
export function checkpointDue(wal: WalState): boolean {
  const written = Number(wal.wal_bytes);
  return written >= Number(wal.due_bytes) || (written > 0 && Number(wal.age_seconds) >= Number(wal.timeout_seconds));
}

/** Milliseconds since `started` (a `performance.now()`), to 0.01 ms, as a pass reports its duration. */
const msSince = (started: number) => Math.round((performance.now() - started) * 100) / 100;

/** Pause before the next step when a table was just handled: yields to the requests waiting. */
const STEP_PAUSE_MS = 20;

function metrics(registry: Registry | undefined) {
  const registers = registry ? [registry] : [];
  return {
    passes: new Counter({
      name: 'wum_embedded_maintenance_passes_total',
      help: 'ANALYZE, VACUUM and CHECKPOINT passes the embedded store ran on itself, by table (* for a checkpoint) and action.',
      labelNames: ['table', 'action'] as const,
      registers,
    }),
    duration: new Histogram({
      name: 'wum_embedded_maintenance_duration_seconds',
      help: 'Duration of one ANALYZE, VACUUM or CHECKPOINT pass of the embedded store, in seconds.',
      labelNames: ['action'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    failures: new Counter({
      name: 'wum_embedded_maintenance_failures_total',
      help: 'Maintenance steps of the embedded store that failed (logged as warnings).',
      registers,
    }),
  };
}

/**
 * The embedded store's maintenance, whose steps the process's scheduler runs (server/scheduler.ts)
 * every `intervalMs`: a step reads the statistics of
 * every table of the public schema (`pg_stat_user_tables`, after flushing this session's
 * pending counts) and, when one is past autovacuum's thresholds ({@link duePass}), runs
 * `ANALYZE` or `VACUUM` and `ANALYZE` of that one table (sampling {@link EMBEDDED_STATISTICS_TARGET}), the most overdue, and the next step comes after
 * a short pause ({@link EmbeddedMaintenance.delayAfter}): one table per step, so requests queued on PGlite's single connection wait
 * for one table's pass at most. A step first checkpoints instead when the checkpointer would
 * ({@link checkpointDue}), which lets PostgreSQL recycle the WAL segments before it. Each pass is logged (one info line), counted and timed
 * (`wum_embedded_maintenance_passes_total`, `wum_embedded_maintenance_duration_seconds`).
 * A failing step is counted (`wum_embedded_maintenance_failures_total`) and rejects; the
 * scheduler logs it and tries again at the next interval. Building it does no I/O.
 * For PGlite only: on PostgreSQL, autovacuum does this.
 */
export function createEmbeddedMaintenance(options: MaintenanceOptions): EmbeddedMaintenance {
  const { db, settings, log } = options;
  const counted = metrics(options.registry);
  let stopped = false;
  let running: Promise<MaintenancePass | undefined> | undefined;

  /** What was done, logged, counted and timed. */
  function record(pass: MaintenancePass): MaintenancePass {
    counted.passes.inc({ table: pass.table, action: pass.action });
    counted.duration.observe({ action: pass.action }, pass.durationMs / 1000);
    log.info({ ...pass }, `embedded store: ${pass.action}${pass.table === ALL_TABLES ? '' : ` ${pass.table}`}`);
    return pass;
  }

  async function checkpointIfDue(): Promise<MaintenancePass | undefined> {
    const result = (await db.execute(sql`select pg_wal_lsn_diff(pg_current_wal_lsn(), c.redo_lsn)::float8 as wal_bytes,
        pg_size_bytes(current_setting('max_wal_size'))::float8 / (1 + current_setting('checkpoint_completion_target')::float8) as due_bytes,
        extract(epoch from now() - c.checkpoint_time)::float8 as age_seconds,
        extract(epoch from current_setting('checkpoint_timeout')::interval)::float8 as timeout_seconds
      from pg_control_checkpoint() c`)) as unknown as { rows: WalState[] };
    const wal = result.rows[0]!;
    if (!checkpointDue(wal)) return undefined;
    const started = performance.now();
    await db.execute(sql`checkpoint`);
    return record({ table: ALL_TABLES, action: 'checkpoint', modifiedRows: 0, deadRows: 0, walBytes: Number(wal.wal_bytes), durationMs: msSince(started) });
  }

  async function runStep(): Promise<MaintenancePass | undefined> {
    const checkpointed = await checkpointIfDue();
    if (checkpointed) return checkpointed;
    // This session's counts reach pg_stat_* when it reports them (at most once a second); the
    // embedded database has one session, ours, so flush them before looking.
    await db.execute(sql`select pg_stat_force_next_flush()`);
    const result = (await db.execute(sql`select s.relname, c.reltuples, s.n_mod_since_analyze, s.n_dead_tup
      from pg_stat_user_tables s join pg_class c on c.oid = s.relid
      where s.schemaname = 'public'`)) as unknown as { rows: TableStats[] };
    let chosen: { table: TableStats; action: 'analyze' | 'vacuum'; overshoot: number } | undefined;
    for (const table of result.rows) {
      const due = duePass(table, settings);
      if (due && (!chosen || due.overshoot > chosen.overshoot)) chosen = { table, ...due };
    }
    if (!chosen) return undefined;
    const name = chosen.table.relname;
    const started = performance.now();
    // VACUUM cannot run in a transaction, where `set local` scopes the target to the ANALYZE.
    if (chosen.action === 'vacuum') await db.execute(sql`vacuum ${sql.identifier(name)}`);
    await db.transaction(async (tx) => {
      await tx.execute(sql.raw(`set local default_statistics_target = ${EMBEDDED_STATISTICS_TARGET}`));
      await tx.execute(sql`analyze ${sql.identifier(name)}`);
    });
    return record({
      table: name,
      action: chosen.action,
      modifiedRows: Number(chosen.table.n_mod_since_analyze),
      deadRows: Number(chosen.table.n_dead_tup),
      durationMs: msSince(started),
    });
  }

  const step = () => {
    if (stopped) return Promise.resolve(undefined);
    running ??= runStep()
      .catch((error: unknown) => {
        counted.failures.inc();
        throw error;
      })
      .finally(() => (running = undefined));
    return running;
  };

  return {
    step,
    delayAfter: (pass) => (pass ? STEP_PAUSE_MS : settings.intervalMs),
    async stop() {
      stopped = true;
      await running?.catch(() => undefined);
    },
  };
}

/**
 * {@link createEmbeddedMaintenance} when `kind` is `pglite` and `settings` are given (the
 * task is on); undefined otherwise: PostgreSQL has autovacuum. The one call the
 * composition root makes.
 */
export function maintainEmbeddedStore(
  database: { readonly db: Database; readonly kind: 'postgres' | 'pglite' },
  settings: MaintenanceSettings | undefined,
  log: MaintenanceLog,
  registry?: Registry,
): EmbeddedMaintenance | undefined {
  if (database.kind !== 'pglite' || !settings) return undefined;
  return createEmbeddedMaintenance({ db: database.db, settings, log, ...(registry ? { registry } : {}) });
}
