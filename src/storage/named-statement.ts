import { createHash } from 'node:crypto';
import { DrizzleQueryError, fillPlaceholders, sql, type Placeholder, type Query, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Database } from './database.ts';
import { isEmbeddedClient, runPrepared } from './pglite-prepared.ts';
import { rowsOf } from './rows.ts';

const dialect = new PgDialect();

/**
 * A SQL statement of a hot path, built once and run as a named prepared statement. Over
 * PostgreSQL each pooled connection parses and plans it once, then only binds and executes
 * it (for the short queries of the hot paths, planning costs as much as running); its text is
 * built once per process rather than on every call. The embedded database does the same, once
 * per database (pglite-prepared.ts).
 *
 * Values go in through placeholders (`ph('name')`), never interpolated, so that one name
 * always stands for one text (the driver refuses one name for two texts); a query with
 * variants (a status filter, a lock clause) is one NamedStatement per variant.
 * Source: PostgreSQL "PREPARE" (plan caching); node-postgres "Prepared statements";
 * Drizzle "sql.placeholder".
 */
export class NamedStatement {
  private built: Query | undefined;

  /**
   * @param name - unique among the process's statements (e.g. `wum_users_page`).
   * @param build - the statement, with `ph(...)` wherever a value goes; called once, lazily.
   */
  constructor(
    readonly name: string,
    private readonly build: () => SQL,
  ) {}

  /** The statement's text (`$1`, `$2`, … in place of its placeholders) and its parameters, built on first use. */
  query(): Query {
    return (this.built ??= dialect.sqlToQuery(this.build()));
  }

  /**
   * Runs the statement on `db` (the pool, or a transaction) with `values` for its
   * placeholders, and returns its rows as the driver decodes them (objects keyed by column
   * name; timestamps as text, int8 as number or string depending on the driver).
   */
  async run<T>(db: Database, values: Record<string, unknown>): Promise<T[]> {
    const built = this.query();
    const client = embeddedClient(db);
    if (client) {
      const params = fillPlaceholders(built.params, values);
      try {
        return rowsOf<T>(await runPrepared(client, this.name, built.sql, params));
      } catch (error) {
        // As Drizzle reports a failed statement: the driver's error (its code, constraint) as the cause.
        throw new DrizzleQueryError(built.sql, params, error as Error);
      }
    }
    return runNamed<T>(db, this.name, built, values);
  }
}

/** The embedded database (or transaction of one) behind `db`, if that is what it is. */
function embeddedClient(db: Database): object | undefined {
  const { client } = db._.session as unknown as { client?: object };
  return client && isEmbeddedClient(client) ? client : undefined;
}

/** Runs `built` on PostgreSQL as the prepared statement `name`, with `values` for its placeholders. */
async function runNamed<T>(db: Database, name: string, built: Query, values: Record<string, unknown>): Promise<T[]> {
  return rowsOf<T>(await db._.session.prepareQuery(built, undefined, name, false).execute(values));
}

/**
 * Runs statements whose text depends only on their shape (every value a parameter: a filtered
 * listing built per request from its filter) as named prepared statements on PostgreSQL, each
 * named after its text: a connection parses and plans a shape once, then PostgreSQL reuses the
 * plan it keeps for it, where a one-off statement is planned on every call (a filtered listing's
 * planning had cost five to fifteen times its execution: docs/performance.md, "Filtered
 * listings planned once"). Only the first `maxShapes` texts get a name; later ones run unnamed,
 * so that no client can make a connection keep plans without bound. The embedded database
 * prepares every statement by its text already (pglite-prepared.ts), so there it runs `execute`.
 */
export class ShapedStatements {
  /** Statement name by text. */
  private readonly names = new Map<string, string>();

  /** @param maxShapes - most distinct texts named (and so kept prepared on each connection). */
  constructor(private readonly maxShapes: number) {}

  /** Runs `query` on `db` (the pool, or a transaction); its rows as {@link NamedStatement.run} returns them. */
  async run<T>(db: Database, query: SQL): Promise<T[]> {
    if (embeddedClient(db)) return rowsOf<T>(await db.execute(query));
    const built = dialect.sqlToQuery(query);
    let name = this.names.get(built.sql);
    if (name === undefined) {
      if (this.names.size >= this.maxShapes) return rowsOf<T>(await db.execute(query));
      // Named after the text itself: one name always stands for one text, whichever instance named it.
      name = `wum_shape_${createHash('sha256').update(built.sql).digest('hex').slice(0, 24)}`;
      this.names.set(built.sql, name);
    }
    return runNamed<T>(db, name, built, {});
  }
}

/** A named placeholder for a value of a {@link NamedStatement}. */
export function ph(name: string): Placeholder {
  return sql.placeholder(name);
}
