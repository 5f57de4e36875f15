/*
 * What each statement cost PostgreSQL during a benchmark's window, from `pg_stat_statements`
 * (a cluster started with `statementStats`: bench/webhooks-run.ts `--statements`). Execution
 * time is the statement's elapsed time in the backend (waits for locks and for a core included);
 * planning time is the planner's, zero for a named statement whose plan is reused.
 */
import pg from 'pg';

/** Most statements printed, by execution plus planning time. */
const TOP = 8;

/** One statement's figures, per change of the window. */
interface StatementRow {
  calls: string;
  exec_ms: string;
  plan_ms: string;
  rows: string;
  query: string;
}

/** A connection that resets the statistics before a window and prints them per change after it. */
export interface StatementStats {
  /** Forgets every statement's figures so far. */
  reset(): Promise<void>;
  /** Prints, through `log`, the costliest statements since the reset, per change of `changes`. */
  print(changes: number, log: (line: string) => void): Promise<void>;
  close(): Promise<void>;
}

/** Connects to the database at `url` and creates the extension there (the cluster must preload it). */
export async function openStatementStats(url: string): Promise<StatementStats> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('create extension if not exists pg_stat_statements');
  return {
    async reset() {
      await client.query('select pg_stat_statements_reset()');
    },
    async print(changes, log) {
      const { rows } = await client.query<StatementRow>(
        `select calls, total_exec_time as exec_ms, total_plan_time as plan_ms, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 80) as query
         from pg_stat_statements where query not like '%pg_stat_statements%'
         order by total_exec_time + total_plan_time desc limit ${TOP}`,
      );
      const per = (value: string) => ((Number(value) * 1000) / changes).toFixed(0);
      for (const row of rows) {
        const calls = Number(row.calls);
        log(
          `  ${(calls / changes).toFixed(3)} calls per change, ${per(row.exec_ms)} µs executing + ${per(row.plan_ms)} µs planning per change ` +
            `(${((Number(row.exec_ms) * 1000) / calls).toFixed(0)} + ${((Number(row.plan_ms) * 1000) / calls).toFixed(0)} µs a call, ` +
            `${(Number(row.rows) / calls).toFixed(1)} rows): ${row.query}`,
        );
      }
    },
    close: () => client.end(),
  };
}
