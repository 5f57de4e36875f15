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
 */

/** Autovacuum's `autovacuum_vacuum_threshold` and `autovacuum_analyze_threshold` (rows). */
export const BASE_THRESHOLD_ROWS = 50;

/** The logger the task writes to: one info line per pass, a warning when a pass fails. */
export interface MaintenanceLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link startEmbeddedMaintenance}. */
export interface MaintenanceOptions {
  readonly db: Database;
  readonly settings: MaintenanceSettings;
  readonly log: MaintenanceLog;
  /** Where the passes are counted and timed (the `/metrics` registry). */
  readonly registry?: Registry;
}

/** One pass over one table. `action` `vacuum` is `VACUUM (ANALYZE)`. */
export interface MaintenancePass {
  readonly table: string;
  readonly action: 'analyze' | 'vacuum';
  /** Rows changed since the table's last analyze, and dead rows, when the pass was decided. */
  readonly modifiedRows: number;
  readonly deadRows: number;
  readonly durationMs: number;
}

/** A running maintenance task. */
export interface EmbeddedMaintenance {
  /** Runs one step now (the most overdue table, if any) and resolves with what it did. */
  step(): Promise<MaintenancePass | undefined>;
  /** Stops: no step starts after this; resolves when the one running (if any) has finished. */
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

/** Pause before the next step when a table was just handled: yields to the requests waiting. */
const STEP_PAUSE_MS = 20;

function metrics(registry: Registry | undefined) {
  const registers = registry ? [registry] : [];
  return {
    passes: new Counter({
      name: 'wum_embedded_maintenance_passes_total',
      help: 'ANALYZE and VACUUM passes the embedded store ran on itself, by table and action.',
      labelNames: ['table', 'action'] as const,
      registers,
    }),
    duration: new Histogram({
      name: 'wum_embedded_maintenance_duration_seconds',
      help: 'Duration of one ANALYZE or VACUUM pass of the embedded store, in seconds.',
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
 * Starts the embedded store's maintenance: every `intervalMs` it reads the statistics of
 * every table of the public schema (`pg_stat_user_tables`, after flushing this session's
 * pending counts) and, when one is past autovacuum's thresholds ({@link duePass}), runs
 * `ANALYZE` or `VACUUM (ANALYZE)` of that one table, the most overdue, then looks again after
 * a short pause: one table per step, so requests queued on PGlite's single connection wait
 * for one table's pass at most. Each pass is logged (one info line), counted and timed
 * (`wum_embedded_maintenance_passes_total`, `wum_embedded_maintenance_duration_seconds`).
 * A failing step is logged as a warning and tried again at the next interval; it never throws.
 * For PGlite only: on PostgreSQL, autovacuum does this.
 */
export function startEmbeddedMaintenance(options: MaintenanceOptions): EmbeddedMaintenance {
  const { db, settings, log } = options;
  const counted = metrics(options.registry);
  let stopped = false;
  let running: Promise<MaintenancePass | undefined> | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function runStep(): Promise<MaintenancePass | undefined> {
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
    await db.execute(chosen.action === 'vacuum' ? sql`vacuum (analyze) ${sql.identifier(name)}` : sql`analyze ${sql.identifier(name)}`);
    const pass: MaintenancePass = {
      table: name,
      action: chosen.action,
      modifiedRows: Number(chosen.table.n_mod_since_analyze),
      deadRows: Number(chosen.table.n_dead_tup),
      durationMs: Math.round((performance.now() - started) * 100) / 100,
    };
    counted.passes.inc({ table: name, action: pass.action });
    counted.duration.observe({ action: pass.action }, pass.durationMs / 1000);
    log.info({ ...pass }, `embedded store: ${pass.action} ${name}`);
    return pass;
  }

  const step = () => {
    running ??= runStep().finally(() => (running = undefined));
    return running;
  };

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      step().then(
        (pass) => schedule(pass ? STEP_PAUSE_MS : settings.intervalMs),
        (err: unknown) => {
          counted.failures.inc();
          log.warn({ err }, 'embedded store: maintenance step failed');
          schedule(settings.intervalMs);
        },
      );
    }, delayMs);
    timer.unref();
  };
  schedule(settings.intervalMs);

  return {
    step,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}

/**
 * Starts {@link startEmbeddedMaintenance} when `kind` is `pglite` and `settings` are given (the
 * task is on); returns undefined otherwise: PostgreSQL has autovacuum. The one call the
 * composition root makes.
 */
export function maintainEmbeddedStore(
  database: { readonly db: Database; readonly kind: 'postgres' | 'pglite' },
  settings: MaintenanceSettings | undefined,
  log: MaintenanceLog,
  registry?: Registry,
): EmbeddedMaintenance | undefined {
  if (database.kind !== 'pglite' || !settings) return undefined;
  return startEmbeddedMaintenance({ db: database.db, settings, log, ...(registry ? { registry } : {}) });
}
