import { fillPlaceholders, type Query } from 'drizzle-orm';
import { NodePgSession } from 'drizzle-orm/node-postgres';
import { PgliteSession } from 'drizzle-orm/pglite';
import type { Database } from '../src/storage/database.ts';
import { NamedStatement } from '../src/storage/named-statement.ts';

/** One statement as the service sent it through Drizzle: its text and its bound values. */
export interface CapturedStatement {
  readonly text: string;
  readonly params: readonly unknown[];
}

type PrepareQuery = (query: Query, ...rest: unknown[]) => { execute(values?: Record<string, unknown>): Promise<unknown> };

/** Transaction control and session settings: nothing to plan. */
const CONTROL = /^\s*(begin|commit|rollback|savepoint|release|set|reset|start|select pg_advisory)/i;

/**
 * Runs `work` and returns every statement sent meanwhile through Drizzle's sessions (pooled,
 * in a transaction, or a named prepared statement), on either backend, without transaction
 * control. Wraps the sessions' `prepareQuery` and {@link NamedStatement.run} (which prepares
 * on the embedded store without Drizzle) process-wide while `work` runs: one at a time.
 */
export async function captureStatements(_db: Database, work: () => Promise<unknown>): Promise<CapturedStatement[]> {
  const captured: CapturedStatement[] = [];
  let inNamed = 0;
  const prototypes = [NodePgSession.prototype, PgliteSession.prototype] as unknown as Array<{ prepareQuery: PrepareQuery }>;
  const originals = prototypes.map((p) => p.prepareQuery);
  prototypes.forEach((prototype, i) => {
    const original = originals[i]!;
    prototype.prepareQuery = function (this: unknown, query: Query, ...rest: unknown[]) {
      const prepared = original.call(this, query, ...rest);
      const execute = prepared.execute.bind(prepared);
      prepared.execute = (values?: Record<string, unknown>) => {
        if (inNamed === 0 && !CONTROL.test(query.sql)) captured.push({ text: query.sql, params: fillPlaceholders(query.params, values ?? {}) });
        return execute(values);
      };
      return prepared;
    };
  });
  const named = NamedStatement.prototype;
  const originalRun = named.run;
  named.run = function <T>(this: NamedStatement, db: Database, values: Record<string, unknown>): Promise<T[]> {
    const query = this.query();
    captured.push({ text: query.sql, params: fillPlaceholders(query.params, values) });
    // Its prepareQuery (on PostgreSQL) is called before run's first await: not captured twice.
    inNamed += 1;
    try {
      return originalRun.call(this, db, values) as Promise<T[]>;
    } finally {
      inNamed -= 1;
    }
  };
  try {
    await work();
  } finally {
    prototypes.forEach((prototype, i) => (prototype.prepareQuery = originals[i]!));
    named.run = originalRun;
  }
  return captured;
}

interface RawClient {
  query(text: string, params?: readonly unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

const rawClient = (db: Database) => (db._ as unknown as { session: { client: RawClient } }).session.client;

/** A statement that only reads (may be run again without changing anything). */
const READ_ONLY = (text: string) => /^\s*(select|with)\b/i.test(text) && !/\b(insert|update|delete)\b|for (update|share)/i.test(text);

/** What one statement costs the tables: its plan, and what running it read. */
export interface StatementPlan {
  /** `EXPLAIN`'s lines, values bound. */
  readonly plan: string;
  /**
   * Per table, the sequential scans and the rows read (by sequential and index scans) while
   * the statement ran, functions it calls included (their statements `EXPLAIN` does not show);
   * empty for a statement that writes (only explained, never run again).
   */
  readonly read: ReadonlyMap<string, { readonly seqScans: number; readonly rows: number }>;
}

/** Rows of each growing table read by `work`, counted by `pg_stat_xact_user_tables`, in a transaction that is rolled back. */
async function countedReads<T>(db: Database, work: (client: RawClient) => Promise<T>): Promise<{ result: T; read: StatementPlan['read'] }> {
  const counted = `select relname, seq_scan::int8::text as scans, (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int8::text as n
    from pg_stat_xact_user_tables`;
  const read = new Map<string, { seqScans: number; rows: number }>();
  let result: T | undefined;
  await db
    .transaction(async (tx) => {
      const client = rawClient(tx as unknown as Database);
      const before = new Map((await client.query(counted)).rows.map((r) => [String(r.relname), r]));
      result = await work(client);
      for (const row of (await client.query(counted)).rows) {
        const was = before.get(String(row.relname));
        const seqScans = Number(row.scans) - Number(was?.scans ?? 0);
        const rows = Number(row.n) - Number(was?.n ?? 0);
        if (seqScans > 0 || rows > 0) read.set(String(row.relname), { seqScans, rows });
      }
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  return { result: result as T, read };
}

/** `EXPLAIN`'s lines as one text. */
const planText = (rows: ReadonlyArray<Record<string, unknown>>) => rows.map((row) => String(Object.values(row)[0])).join('\n');

/**
 * {@link StatementPlan} of `statement`: `EXPLAIN` with its values bound; a statement that only
 * reads is also run once in a transaction that is rolled back, counted by
 * `pg_stat_xact_user_tables` (this transaction's own counters).
 */
export async function explainStatement(db: Database, statement: CapturedStatement): Promise<StatementPlan> {
  const plan = planText((await rawClient(db).query(`explain ${statement.text}`, statement.params)).rows);
  if (!READ_ONLY(statement.text)) return { plan, read: new Map() };
  const { read } = await countedReads(db, (client) => client.query(statement.text, statement.params));
  return { plan, read };
}

/**
 * {@link StatementPlan} of a statement that only reads, its plan from `EXPLAIN (ANALYZE,
 * BUFFERS)`: run once, with the rows it read, in a transaction that is rolled back.
 * @throws Error when `statement` writes.
 */
export async function explainAnalyze(db: Database, statement: CapturedStatement): Promise<StatementPlan> {
  if (!READ_ONLY(statement.text)) throw new Error(`not a read: ${statement.text}`);
  const { result, read } = await countedReads(db, (client) => client.query(`explain (analyze, buffers) ${statement.text}`, statement.params));
  return { plan: planText(result.rows), read };
}

class RolledBack extends Error {}

/**
 * Median planning time (ms) of `statement` over `times` plans: `EXPLAIN (SUMMARY)` with its
 * values bound, which plans it without running it.
 */
export async function planningMs(db: Database, statement: CapturedStatement, times: number): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < times; i += 1) {
    const lines = planText((await rawClient(db).query(`explain (summary) ${statement.text}`, statement.params)).rows);
    ms.push(Number(/Planning Time: ([0-9.]+) ms/.exec(lines)?.[1] ?? Number.NaN));
  }
  return ms.sort((a, b) => a - b)[Math.floor(times / 2)]!;
}

/** A bound value as an SQL literal of unknown type, which PostgreSQL coerces to its parameter's type. */
const literal = (value: unknown) =>
  value === null || value === undefined ? 'null' : `'${(typeof value === 'object' ? JSON.stringify(value) : String(value)).replaceAll("'", "''")}'`;

/**
 * `EXPLAIN (ANALYZE, BUFFERS)` of the generic plan of a statement that only reads: the plan a
 * named prepared statement may settle on after five executions (PostgreSQL "PREPARE", plan
 * caching), which an `EXPLAIN` with values bound never shows. Prepared under
 * `plan_cache_mode = force_generic_plan` in a transaction that is rolled back.
 * @throws Error when `statement` writes.
 */
export async function explainGeneric(db: Database, statement: CapturedStatement): Promise<string> {
  if (!READ_ONLY(statement.text)) throw new Error(`not a read: ${statement.text}`);
  const { result } = await countedReads(db, async (client) => {
    await client.query('set local plan_cache_mode = force_generic_plan');
    await client.query(`prepare wum_explain_generic as ${statement.text}`);
    try {
      const args = statement.params.length === 0 ? '' : `(${statement.params.map(literal).join(', ')})`;
      return await client.query(`explain (analyze, buffers) execute wum_explain_generic${args}`);
    } finally {
      await client.query('deallocate wum_explain_generic');
    }
  });
  return planText(result.rows);
}
