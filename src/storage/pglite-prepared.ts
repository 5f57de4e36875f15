/*
 * Named prepared statements on the embedded database. PGlite's `query` sends every statement
 * unnamed, as six separate exchanges with the WebAssembly backend (parse, describe, bind,
 * describe, execute, sync), so PostgreSQL parses, analyzes and plans it on every call: for a
 * change of a user (one statement of ten CTEs) that was 1.7 ms of 2.2 ms. Here a statement is
 * parsed once per database under its name, and each call is one exchange (bind, describe,
 * execute, sync), as node-postgres does over a connection (docs/performance.md, "Named
 * statements on the embedded store"). Source: PostgreSQL, "Message Flow: Extended Query".
 */
import type { PGlite, Results, Transaction } from '@electric-sql/pglite';

/** The parts of `@electric-sql/pglite` this module uses, handed over by the caller that loaded it. */
export interface PgliteProtocolKit {
  readonly serialize: Pick<typeof import('@electric-sql/pglite').protocol.serialize, 'parse' | 'describe' | 'bind' | 'execute' | 'sync'>;
  readonly parseResults: typeof import('@electric-sql/pglite').parse.parseResults;
  readonly parseDescribeStatementResults: typeof import('@electric-sql/pglite').parse.parseDescribeStatementResults;
}

/** One embedded database: its instance and the statements prepared on it (name → parameter type OIDs). */
interface Embedded {
  readonly pglite: PGlite;
  readonly kit: PgliteProtocolKit;
  readonly statements: Map<string, readonly number[]>;
}

/** The embedded database behind a Drizzle session's client: the PGlite instance, or a transaction of it. */
const embedded = new WeakMap<object, Embedded>();

/**
 * Timestamps, dates and intervals stay text, as Drizzle's PGlite driver returns them for a raw
 * statement (`drizzle-orm/pglite`, `rawQueryConfig`), so a row reads the same either way.
 * Type OIDs: timestamp, timestamptz, interval, date and their arrays, numeric[].
 */
const RAW_TEXT_TYPES = [1114, 1184, 1186, 1082, 1115, 1185, 1187, 1182, 1231];
const RAW_PARSERS = Object.fromEntries(RAW_TEXT_TYPES.map((oid) => [oid, (value: string) => value]));

/**
 * Lets {@link runPrepared} run named statements on `pglite` and on every transaction it
 * opens from now on: its `transaction` is wrapped so that each transaction is known as this
 * database's (a transaction object carries no reference to its instance).
 */
export function enablePreparedStatements(pglite: PGlite, kit: PgliteProtocolKit): void {
  const entry: Embedded = { pglite, kit, statements: new Map() };
  embedded.set(pglite, entry);
  const begin = pglite.transaction.bind(pglite);
  pglite.transaction = <T>(work: (tx: Transaction) => Promise<T>): Promise<T> =>
    begin((tx) => {
      embedded.set(tx, entry);
      return work(tx);
    });
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Parses `text` as statement `name` once per database; its parameters' type OIDs. */
async function prepare(db: Embedded, name: string, text: string): Promise<readonly number[]> {
  const known = db.statements.get(name);
  if (known) return known;
  const { serialize, parseDescribeStatementResults } = db.kit;
  const messages = await db.pglite.execProtocolStream(
    concat([serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync()]),
    { syncToFs: false },
  );
  const types = parseDescribeStatementResults(messages);
  db.statements.set(name, types);
  return types;
}

/** Binds `params` to statement `name` and runs it: one exchange with the backend. */
async function execute(db: Embedded, name: string, text: string, params: readonly unknown[]): Promise<Results> {
  const types = await prepare(db, name, text);
  const { serializers } = db.pglite;
  const values = params.map((value, i) => {
    if (value === null || value === undefined) return null;
    const serializer = serializers[types[i]!];
    if (serializer) return serializer(value);
    // PGlite has a serializer for every built-in type it describes; an object without one is JSON.
    return typeof value === 'object' ? JSON.stringify(value) : String(value as string | number | boolean | bigint);
  });
  const { serialize, parseResults } = db.kit;
  const messages = await db.pglite.execProtocolStream(
    concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
    { syncToFs: false },
  );
  return parseResults(messages, db.pglite.parsers, { rowMode: 'object', parsers: RAW_PARSERS })[0] ?? { rows: [], fields: [] };
}

/** Whether `client` (a Drizzle session's client) is an embedded database, or a transaction of one, that {@link enablePreparedStatements} prepared. */
export function isEmbeddedClient(client: object): boolean {
  return embedded.has(client);
}

/**
 * Runs statement `name` (always the same `text`) with positional `params` on the embedded
 * database behind `client` (a Drizzle session's client, see {@link isEmbeddedClient}), as
 * PGlite's `query` would, and returns its result (`{ rows, affectedRows, fields }`). Outside a
 * transaction it waits for open transactions as `query` does, and syncs to disk after.
 * @throws Error `not_embedded` (a programming error) when `client` is not one; PGlite's
 * DatabaseError (its `code`, `constraint`) when the statement fails.
 */
export async function runPrepared(client: object, name: string, text: string, params: readonly unknown[]): Promise<Results> {
  const db = embedded.get(client);
  if (!db) throw Object.assign(new Error('not an embedded database that prepares statements'), { code: 'not_embedded' });
  const { pglite } = db;
  if (client !== pglite) return pglite._runExclusiveQuery(() => execute(db, name, text, params));
  await pglite._checkReady();
  return pglite._runExclusiveTransaction(() =>
    pglite._runExclusiveQuery(async () => {
      const result = await execute(db, name, text, params);
      await pglite.syncToFs();
      return result;
    }),
  );
}
