/*
 * The database ceiling: the exact SQL an endpoint runs, recorded from the service itself and
 * replayed straight through `pg` by N clients with one operation in flight each (no HTTP, no
 * Fastify, no Drizzle, none of our code). Recording wraps `pg.Client.prototype.query` while
 * one request runs in process, so the statements, their parameters, the driver options
 * (row mode, type parsers) and the transaction boundaries are the service's own.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { FailureTally, LatencyRecorder, measurement, type Measurement } from './measurement.ts';

/** One statement as the service sent it, with what it returned. */
export interface RecordedQuery {
  /** Name of a prepared statement (parsed once per connection), if the service named it. */
  readonly name: string | undefined;
  readonly text: string;
  readonly values: readonly unknown[];
  readonly rowMode: string | undefined;
  readonly types: unknown;
  rows: unknown[] | undefined;
  rowCount: number | null | undefined;
}

type QueryFunction = (...args: unknown[]) => unknown;

/**
 * Runs `work` and returns every statement any pg client sent meanwhile, in order. Only one
 * piece of work may run at a time (the patch is process-wide).
 */
export async function recordQueries(work: () => Promise<void>): Promise<RecordedQuery[]> {
  const recorded: RecordedQuery[] = [];
  const prototype = pg.Client.prototype as unknown as { query: QueryFunction };
  const original = prototype.query;
  prototype.query = function (this: unknown, ...args: unknown[]) {
    const [config, values] = args as [
      string | { name?: string; text: string; values?: unknown[]; rowMode?: string; types?: unknown },
      unknown,
    ];
    const entry: RecordedQuery = {
      name: typeof config === 'object' ? config.name : undefined,
      text: typeof config === 'string' ? config : config.text,
      values: Array.isArray(values) ? values : (typeof config === 'object' ? config.values : undefined) ?? [],
      rowMode: typeof config === 'object' ? config.rowMode : undefined,
      types: typeof config === 'object' ? config.types : undefined,
      rows: undefined,
      rowCount: undefined,
    };
    recorded.push(entry);
    const keep = (result: { rows?: unknown[]; rowCount?: number | null } | undefined) => {
      entry.rows = result?.rows;
      entry.rowCount = result?.rowCount;
    };
    const callbackAt = args.findIndex((a, i) => i > 0 && typeof a === 'function');
    if (callbackAt > 0) {
      const callback = args[callbackAt] as (error: unknown, result: unknown) => void;
      args[callbackAt] = (error: unknown, result: { rows?: unknown[] }) => {
        if (!error) keep(result);
        callback(error, result);
      };
      return original.apply(this, args);
    }
    const promise = original.apply(this, args) as Promise<{ rows?: unknown[] }>;
    return promise.then((result) => {
      keep(result);
      return result;
    });
  };
  try {
    await work();
  } finally {
    prototype.query = original;
  }
  return recorded;
}

/** Where a replayed parameter comes from. */
type ParameterSource =
  | { readonly kind: 'constant'; readonly value: unknown }
  /**
   * A string with the recorded email, or an id the service generated for the operation (a new
   * user's UUID), in it: rewritten with each operation's email and a new UUID.
   */
  | { readonly kind: 'email'; readonly template: string }
  /** A value an earlier statement of the same operation returned (e.g. a new user's id). */
  | { readonly kind: 'result'; readonly query: number; readonly column: number };

/** A recorded operation made replayable. */
export interface SqlTemplate {
  readonly statements: ReadonlyArray<{
    readonly name: string | undefined;
    readonly text: string;
    readonly rowMode: string | undefined;
    readonly types: unknown;
    readonly parameters: readonly ParameterSource[];
    readonly rowCount: number | null | undefined;
  }>;
}

function firstRowCells(rows: unknown[] | undefined): unknown[] {
  const first = rows?.[0];
  if (first === undefined || first === null) return [];
  return Array.isArray(first) ? first : Object.values(first);
}

const EMAIL_MARK = '\u0000email\u0000';
const UUID_MARK = '\u0000uuid\u0000';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/gi;

/**
 * The UUIDs the service generated for the recorded operation: those first seen in a
 * statement's parameters rather than in an earlier statement's results.
 */
function generatedUuids(recorded: readonly RecordedQuery[]): Set<string> {
  const seenInResults = new Set<string>();
  const generated = new Set<string>();
  for (const query of recorded) {
    for (const value of query.values) {
      for (const uuid of typeof value === 'string' ? (value.match(UUID) ?? []) : []) {
        if (!seenInResults.has(uuid.toLowerCase())) generated.add(uuid.toLowerCase());
      }
    }
    for (const cell of firstRowCells(query.rows)) {
      for (const uuid of String(cell).match(UUID) ?? []) seenInResults.add(uuid.toLowerCase());
    }
  }
  return generated;
}

/**
 * Turns recorded statements into a template: parameters holding `email` (in any letter case,
 * also inside JSON) follow each operation's email, and ids an earlier statement returned
 * follow what that statement returns on replay (a number is taken for such an id when it
 * first appears in a result rather than in an earlier statement's parameters); everything
 * else is replayed as recorded.
 */
export function toTemplate(recorded: readonly RecordedQuery[], email?: string): SqlTemplate {
  const pattern = email ? new RegExp(email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi') : undefined;
  const generated = generatedUuids(recorded);
  const withMarks = (value: string) =>
    (pattern ? value.replace(pattern, EMAIL_MARK) : value).replace(UUID, (uuid) => (generated.has(uuid.toLowerCase()) ? UUID_MARK : uuid));
  const sources: ParameterSource[][] = [];
  return {
    statements: recorded.map((query, index) => ({
      name: query.name,
      text: query.text,
      rowMode: query.rowMode,
      types: query.types,
      rowCount: query.rowCount,
      parameters: (sources[index] = query.values.map((value): ParameterSource => {
        if (typeof value === 'string' && withMarks(value) !== value) return { kind: 'email', template: withMarks(value) };
        // An id an earlier statement returned and the service passed on more than once (lock,
        // then read, then write the same row) follows that result every time.
        const passedOn = sources
          .flatMap((earlier, i) => earlier.filter((source, j) => source.kind === 'result' && String(recorded[i]!.values[j]) === String(value)))
          .at(0);
        if (passedOn) return passedOn;
        const fromApp = recorded.slice(0, index).some((q) => q.values.some((v) => String(v) === String(value)));
        if (!fromApp && (typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value)))) {
          for (let earlier = index - 1; earlier >= 0; earlier -= 1) {
            const column = firstRowCells(recorded[earlier]!.rows).findIndex((cell) => String(cell) === String(value));
            if (column >= 0) return { kind: 'result', query: earlier, column };
          }
        }
        return { kind: 'constant', value };
      })),
    })),
  };
}

/**
 * Runs one operation of `template` on `client` (a connection of its own or from a pool) with
 * `email` and a new UUID for the ids the service generated; returns each statement's row count.
 */
export async function runOperation(client: pg.ClientBase, template: SqlTemplate, email: string): Promise<Array<number | null>> {
  const results: Array<{ rows: unknown[]; rowCount: number | null }> = [];
  const uuid = randomUUID();
  try {
    for (const statement of template.statements) {
      const values = statement.parameters.map((source) => {
        if (source.kind === 'constant') return source.value;
        if (source.kind === 'email') return source.template.split(EMAIL_MARK).join(email).split(UUID_MARK).join(uuid);
        return firstRowCells(results[source.query]?.rows)[source.column];
      });
      const config = {
        ...(statement.name ? { name: statement.name } : {}),
        text: statement.text,
        values,
        rowMode: statement.rowMode,
        types: statement.types,
      } as pg.QueryConfig;
      results.push(await client.query(config));
    }
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  }
  return results.map((r) => r.rowCount);
}

/** A type parser override as the driver options carry it (node-postgres `types`). */
type TypeOverrides = { getTypeParser: (oid: number, format?: string) => unknown };

/**
 * The template as JSON, for a replay in another process. Driver `types` (functions) are
 * written as the built-in type ids (below 10,000) whose text the recorded options leave undecoded (Drizzle's
 * timestamps, dates and intervals) and read back by {@link templateFromJson} as the same
 * options.
 */
export function templateToJson(template: SqlTemplate): string {
  const undecoded = (types: unknown) => {
    if (!types) return undefined;
    const parser = (types as TypeOverrides).getTypeParser;
    // Every built-in type id (arrays included) is below 10,000.
    return Array.from({ length: 10_000 }, (_, oid) => oid).filter(
      (oid) => parser(oid, 'text') !== pg.types.getTypeParser(oid, 'text') && (parser(oid, 'text') as (v: string) => unknown)('1') === '1',
    );
  };
  return JSON.stringify({ statements: template.statements.map((s) => ({ ...s, types: undecoded(s.types) })) });
}

/** The template {@link templateToJson} wrote. */
export function templateFromJson(json: string): SqlTemplate {
  const parsed = JSON.parse(json) as { statements: Array<SqlTemplate['statements'][number] & { types?: number[] }> };
  const overrides = (undecoded: number[] | undefined): TypeOverrides | undefined => {
    if (!undecoded) return undefined;
    const raw = new Set(undecoded);
    return { getTypeParser: (oid, format): unknown => (raw.has(oid) ? (value: string) => value : pg.types.getTypeParser(oid, format as 'text')) };
  };
  return { statements: parsed.statements.map((s) => ({ ...s, types: overrides(s.types) })) };
}

/** How to replay a template. */
export interface Replay {
  readonly url: string;
  /** Concurrent clients, each with its own connection and one operation in flight. */
  readonly clients: number;
  /** Warm-up, then the measured window, in seconds. */
  readonly warmupSeconds: number;
  readonly seconds: number;
  /** The email of the next operation (unique emails for adds, the next user for removals). */
  readonly nextEmail?: () => string;
}

/**
 * Checks that one replayed operation touches as many rows per statement as the recording
 * did (so the template really does what the endpoint does), then measures `clients`
 * concurrent loops for the window. Errors are counted by SQLSTATE.
 * @throws Error when the check fails.
 */
export async function replaySql(template: SqlTemplate, replay: Replay): Promise<Measurement> {
  const nextEmail = replay.nextEmail ?? (() => '');
  const connect = async () => {
    const client = new pg.Client({ connectionString: replay.url });
    await client.connect();
    return client;
  };
  const probe = await connect();
  try {
    const counts = await runOperation(probe, template, nextEmail());
    const expected = template.statements.map((s) => s.rowCount ?? null);
    if (JSON.stringify(counts) !== JSON.stringify(expected)) {
      throw new Error(`replayed row counts ${JSON.stringify(counts)} differ from the recording's ${JSON.stringify(expected)}`);
    }
  } finally {
    await probe.end();
  }
  const clients = await Promise.all(Array.from({ length: replay.clients }, connect));
  const latencies = new LatencyRecorder();
  const failures = new FailureTally();
  let operations = 0;
  let measuring = false;
  const loop = async (client: pg.Client, until: number) => {
    while (performance.now() < until) {
      const started = performance.now();
      try {
        await runOperation(client, template, nextEmail());
        if (measuring) {
          operations += 1;
          latencies.record(performance.now() - started);
        }
      } catch (error) {
        if (measuring) failures.add(`sql ${(error as { code?: string }).code ?? 'error'}`);
      }
    }
  };
  try {
    await Promise.all(clients.map((c) => loop(c, performance.now() + replay.warmupSeconds * 1000)));
    measuring = true;
    const started = performance.now();
    await Promise.all(clients.map((c) => loop(c, started + replay.seconds * 1000)));
    return measurement(operations, (performance.now() - started) / 1000, latencies, failures);
  } finally {
    await Promise.all(clients.map((c) => c.end()));
  }
}
