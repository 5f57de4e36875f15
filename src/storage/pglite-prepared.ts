/*
 * Named prepared statements on the embedded database. PGlite's `query` sends every statement
 * unnamed, as six separate exchanges with the WebAssembly backend (parse, describe, bind,
 * describe, execute, sync), so PostgreSQL parses, analyzes and plans it on every call: for a
 * change of a user (one statement of ten CTEs) that was 1.7 ms of 2.2 ms. Here a statement is
 * parsed once per database under its name, and each call is one exchange (bind, describe,
 * execute, sync), as node-postgres does over a connection (docs/performance.md, "Named
 * statements on the embedded store"). The statements Drizzle's query builders send without a
 * name are prepared the same way, by their text, the most recently used few hundred kept.
 * Source: PostgreSQL, "Message Flow: Extended Query".
 */
import type { PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite';
import { LRUCache } from 'lru-cache';

/** The parts of `@electric-sql/pglite` this module uses, handed over by the caller that loaded it. */
export interface PgliteProtocolKit {
  readonly serialize: Pick<typeof import('@electric-sql/pglite').protocol.serialize, 'parse' | 'describe' | 'bind' | 'execute' | 'sync' | 'close'>;
  readonly parseResults: typeof import('@electric-sql/pglite').parse.parseResults;
  readonly parseDescribeStatementResults: typeof import('@electric-sql/pglite').parse.parseDescribeStatementResults;
}

/** One embedded database: its instance and the statements prepared on it (name → parameter type OIDs). */
interface Embedded {
  readonly pglite: PGlite;
  readonly kit: PgliteProtocolKit;
  readonly statements: Map<string, readonly number[]>;
  /** The names given to statements prepared by their text, the most recently used kept. */
  readonly byText: LRUCache<string, string>;
  /** Names the cache let go of, to close before the next statement runs. */
  readonly evicted: string[];
  /** How many statements were prepared by their text so far (for their names). */
  prepared: number;
}

/**
 * Most statements prepared by their text that a database keeps; the least recently used is
 * closed for the next. Texts that vary with their values (an `in (…)` list of each length, a
 * SCIM filter of each shape) are many, the service's own texts a few hundred at most.
 */
const MAX_PREPARED_BY_TEXT = 500;

/** Statements worth preparing by text: reads and writes, not DDL, transaction control or maintenance. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;

/** The embedded database behind a Drizzle session's client: the PGlite instance, or a transaction of it. */
const embedded = new WeakMap<object, Embedded>();

/**
 * Timestamps, dates and intervals stay text, as Drizzle's PGlite driver returns them for a raw
 * statement (`drizzle-orm/pglite`, `rawQueryConfig`), so a row reads the same either way.
 * Type OIDs: timestamp, timestamptz, interval, date and their arrays, numeric[].
 */
const RAW_TEXT_TYPES = [1114, 1184, 1186, 1082, 1115, 1185, 1187, 1182, 1231];
const RAW_OPTIONS: QueryOptions = { rowMode: 'object', parsers: Object.fromEntries(RAW_TEXT_TYPES.map((oid) => [oid, (value: string) => value])) };

/**
 * Lets {@link runPrepared} run named statements on `pglite` and on every transaction it
 * opens from now on, and prepares by their text the statements sent to either through
 * `query` (Drizzle's query builders): its `query` and `transaction` are wrapped, the latter so
 * that each transaction is known as this database's (a transaction object carries no
 * reference to its instance). Call it once the database is migrated: a migration's statements
 * run once, and are not worth keeping.
 */
export function enablePreparedStatements(pglite: PGlite, kit: PgliteProtocolKit): void {
  const evicted: string[] = [];
  const byText = new LRUCache<string, string>({
    max: MAX_PREPARED_BY_TEXT,
    dispose: (name, _text, reason) => {
      if (reason === 'evict') evicted.push(name);
    },
  });
  const entry: Embedded = { pglite, kit, statements: new Map(), byText, evicted, prepared: 0 };
  embedded.set(pglite, entry);
  pglite.query = preparingByText(pglite);
  const begin = pglite.transaction.bind(pglite);
  pglite.transaction = <T>(work: (tx: Transaction) => Promise<T>): Promise<T> =>
    begin((tx) => {
      embedded.set(tx, entry);
      tx.query = preparingByText(tx);
      return work(tx);
    });
}

/**
 * `client`'s `query` (the instance's or a transaction's), but a read or write with no file or
 * parameter types of its own runs prepared by its text ({@link runByText}).
 */
function preparingByText<C extends PGlite | Transaction>(client: C): C['query'] {
  const query = client.query.bind(client) as (text: string, params?: unknown[], options?: QueryOptions) => Promise<Results>;
  return ((text: string, params?: unknown[], options?: QueryOptions) =>
    PREPARABLE.test(text) && !options?.blob && !options?.paramTypes ? runByText(client, text, params ?? [], options) : query(text, params, options)) as C['query'];
}

/** Runs `text` under the name it was prepared with, preparing it (and closing the least recently used) first if need be. */
function runByText<T>(client: object, text: string, params: readonly unknown[], options: QueryOptions | undefined): Promise<Results<T>> {
  const db = embedded.get(client)!;
  let name = db.byText.get(text);
  if (name === undefined) {
    db.prepared += 1;
    name = `wum_text_${db.prepared}`;
    db.byText.set(text, name);
  }
  // PGlite's defaults when the caller gave no options (its own parsers: timestamps as Date).
  return runPrepared(client, name, text, params, options ?? {}, db.evicted.splice(0)) as Promise<Results<T>>;
}

/** Parses `text` as statement `name` once per database; its parameters' type OIDs. */
async function prepare(db: Embedded, name: string, text: string): Promise<readonly number[]> {
  const known = db.statements.get(name);
  if (known) return known;
  const { serialize, parseDescribeStatementResults } = db.kit;
  const messages = await db.pglite.execProtocolStream(
    Buffer.concat([serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync()]),
    { syncToFs: false },
  );
  const types = parseDescribeStatementResults(messages);
  db.statements.set(name, types);
  return types;
}

/** Closes the statements `names` (prepared by their text, now evicted), so that the backend frees them. */
async function close(db: Embedded, names: readonly string[]): Promise<void> {
  const { serialize } = db.kit;
  const prepared = names.filter((name) => db.statements.delete(name));
  if (prepared.length === 0) return;
  await db.pglite.execProtocolStream(Buffer.concat([...prepared.map((name) => serialize.close({ type: 'S', name })), serialize.sync()]), { syncToFs: false });
}

/** Binds `params` to statement `name` and runs it: one exchange with the backend. */
async function execute(db: Embedded, name: string, text: string, params: readonly unknown[], options: QueryOptions | undefined): Promise<Results> {
  const types = await prepare(db, name, text);
  const serializers = { ...db.pglite.serializers, ...options?.serializers };
  const values = params.map((value, i) => {
    if (value === null || value === undefined) return null;
    const serializer = serializers[types[i]!];
    if (serializer) return serializer(value);
    // PGlite has a serializer for every built-in type it describes; an object without one is JSON.
    return typeof value === 'object' ? JSON.stringify(value) : String(value as string | number | boolean | bigint);
  });
  const { serialize, parseResults } = db.kit;
  const messages = await db.pglite.execProtocolStream(
    Buffer.concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
    { syncToFs: false },
  );
  return parseResults(messages, db.pglite.parsers, options)[0] ?? { rows: [], fields: [] };
}

/** Whether `client` (a Drizzle session's client) is an embedded database, or a transaction of one, that {@link enablePreparedStatements} prepared. */
export function isEmbeddedClient(client: object): boolean {
  return embedded.has(client);
}

/**
 * Runs statement `name` (always the same `text`) with positional `params` on the embedded
 * database behind `client` (a Drizzle session's client, see {@link isEmbeddedClient}), as
 * PGlite's `query` would, and returns its result (`{ rows, affectedRows, fields }`): rows as
 * objects with timestamps as text, as Drizzle's PGlite driver reads a raw statement, unless
 * `options` say otherwise (`rowMode`, `parsers`, `serializers`). It first closes the statements
 * `evicted`. Outside a transaction it waits for open transactions as `query` does, and syncs
 * to disk after.
 * @throws Error `not_embedded` (a programming error) when `client` is not one; PGlite's
 * DatabaseError (its `code`, `constraint`) when the statement fails.
 */
export async function runPrepared(
  client: object,
  name: string,
  text: string,
  params: readonly unknown[],
  options: QueryOptions | undefined = RAW_OPTIONS,
  evicted: readonly string[] = [],
): Promise<Results> {
  const db = embedded.get(client);
  if (!db) throw Object.assign(new Error('not an embedded database that prepares statements'), { code: 'not_embedded' });
  const { pglite } = db;
  const run = async () => {
    await close(db, evicted);
    return execute(db, name, text, params, options);
  };
  if (client !== pglite) return pglite._runExclusiveQuery(run);
  await pglite._checkReady();
  return pglite._runExclusiveTransaction(() =>
    pglite._runExclusiveQuery(async () => {
      const result = await run();
      await pglite.syncToFs();
      return result;
    }),
  );
}
