import { AsyncLocalStorage } from 'node:async_hooks';
import { createTableRelationsHelpers, extractTablesRelationalConfig, type SQL } from 'drizzle-orm';
import { NodePgSession, NodePgTransaction } from 'drizzle-orm/node-postgres';
import { PgDialect } from 'drizzle-orm/pg-core';
import type pg from 'pg';
import type { Database } from './database-handle.ts';
import * as schema from './schema.ts';
import type { PendingStatement, RequestTransaction } from '../core/idempotency/request-transaction.ts';
import { lastResult } from './rows.ts';

/*
 * One transaction for the whole of a request (PostgreSQL): what the request changes and the
 * record of its answer commit together, or not at all. The idempotency plugin opens it for a
 * request that carries an `Idempotency-Key`, so that a failover in the middle cannot leave a
 * change without its stored answer (a retry would run it again) or a stored claim without its
 * change (a retry would be told to wait): after any failure the retry either replays the
 * committed answer or runs afresh. Storage code does not pass it around: the database handle of
 * the store is a {@link scopedDatabase}, which runs every statement in the request's
 * transaction while one is open in the current async context, and on the pool otherwise. The
 * domain's own transactions become savepoints inside it.
 *
 * Rows a change locks (a workspace's event sequence, for one) stay locked until the commit, so
 * the commit is sent together with the answer's record, in one round trip.
 */

/** The request transaction of the current async context, while it is open. */
const current = new AsyncLocalStorage<{ readonly tx: Database; open: boolean; readonly committed: Array<() => void> }>();

/**
 * Runs `signal` once what the current async context wrote has committed: at once outside a
 * request transaction (a domain transaction that returned has committed), after the request
 * transaction's COMMIT inside one (its domain transactions are only savepoints), and never if
 * that transaction rolls back. For signals to other parts of the process (wake the delivery
 * worker), which would otherwise look for rows not yet visible.
 */
export function afterCommit(signal: () => void): void {
  const scope = current.getStore();
  if (scope?.open) scope.committed.push(signal);
  else signal();
}

/**
 * Whether a request transaction is open in the current async context: a statement run there
 * belongs to it, so it must not be combined with other requests' statements (user-batches.queries.ts).
 */
export function inRequestTransaction(): boolean {
  return current.getStore()?.open === true;
}

/**
 * A handle that behaves as `db` outside any request transaction and as that transaction's
 * handle inside one ({@link RequestTransaction.run}), looked up at every use. Drizzle's query
 * builders read their session from it when called, so repositories built once over this handle
 * need no change. Source: Node.js `AsyncLocalStorage`; Drizzle "Transactions" (nested
 * transactions are savepoints).
 */
export function scopedDatabase(db: Database): Database {
  return new Proxy(db, {
    get(target, property): unknown {
      const scope = current.getStore();
      // Work that outlives its request (not awaited by it) falls back to the pool.
      const active = scope?.open ? scope.tx : target;
      return Reflect.get(active, property, active);
    },
  });
}


/** Hands a statement out as the ports' opaque {@link PendingStatement}. */
export function pendingStatement(statement: SQL): PendingStatement {
  return statement as unknown as PendingStatement;
}

const dialect = new PgDialect();
const tables = extractTablesRelationalConfig(schema, createTableRelationsHelpers);
const relational = { fullSchema: schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap };


/**
 * Takes a connection from `pool`, begins a transaction on it and returns it open, with a
 * Drizzle transaction handle over it (nested transactions are savepoints). Source: Drizzle
 * "Transactions"; Stripe, "Designing robust and predictable APIs with idempotency" (the key's
 * record and the work share one atomic phase); PostgreSQL "Multiple Statements in a Simple Query".
 *
 * @throws the driver's error (mapped to 503 by pg-errors.ts) when no connection can be had.
 */
export async function beginRequestTransaction(pool: pg.Pool): Promise<RequestTransaction> {
  const client = await pool.connect();
  try {
    await client.query('begin');
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  const tx = new NodePgTransaction(dialect, new NodePgSession(client, dialect, relational), relational) as unknown as Database;
  const scope = { tx, open: true, committed: [] as Array<() => void> };
  const end = () => {
    if (!scope.open) throw new Error('the request transaction has already ended');
    scope.open = false;
  };
  return {
    run: (work) => current.run(scope, work),
    async commit(last) {
      end();
      const text = last ? `${dialect.sqlToQuery((last as unknown as SQL).inlineParams()).sql};\ncommit` : 'commit';
      try {
        const result = lastResult<pg.QueryResult>(await client.query(text));
        // A transaction in which a statement failed answers COMMIT with ROLLBACK.
        if (result?.command !== 'COMMIT') throw new Error(`the request transaction ended with ${result?.command ?? 'nothing'}, not COMMIT`);
      } catch (error) {
        client.release(error as Error);
        throw error;
      }
      client.release();
      for (const signal of scope.committed.splice(0)) signal();
    },
    async rollback() {
      if (!scope.open) return;
      scope.open = false;
      try {
        await client.query('rollback');
        client.release();
      } catch (error) {
        client.release(error as Error);
      }
    },
  };
}
