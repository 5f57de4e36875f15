/*
 * The database ceilings of the benchmark: for each endpoint, the SQL the service runs for one
 * request (recorded from the service itself, built in process over the same database, with
 * warm caches), replayed through `pg` by as many clients as the HTTP scenarios have
 * connections.
 */
import { loadConfig } from '../src/config/load-config.ts';
import { buildApp } from '../src/http/app.ts';
import { webhookUrlCheck } from '../src/webhooks/url-guard.ts';
import { openDatabase } from '../src/storage/database.ts';
import { createIdempotencyStore } from '../src/storage/idempotency.queries.ts';
import { createStore } from '../src/storage/store.ts';
import { createKeyRing, generateSecretsKey } from '../src/core/secrets/secret-box.ts';
import { TEST_SECRETS_KEY } from '../harness/backend.ts';
import type { HttpRequestSpec } from './http-load.ts';
import type { Measurement } from './measurement.ts';
import { recordQueries, replaySql, toTemplate, type SqlTemplate } from './sql-replay.ts';

/** One endpoint's ceiling to measure. */
export interface CeilingSpec {
  readonly key: string;
  readonly label: string;
  /** Builds the request whose SQL is recorded (called twice: warm-up, then the recording). */
  readonly request: () => HttpRequestSpec;
  /**
   * For requests naming a user: the email of a request (to find it in the recorded
   * parameters) and the email of the next replayed operation.
   */
  readonly email?: { readonly of: (request: HttpRequestSpec) => string; readonly next: () => string };
}

/** How to run the ceilings. */
export interface CeilingRun {
  readonly databaseUrl: string;
  readonly clients: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  /** Called around each replay, e.g. to sample the database's CPU. */
  readonly around: <T>(work: () => Promise<T>) => Promise<{ result: T; extra: object }>;
}

/** A measured ceiling with the SQL it replayed. */
export interface Ceiling {
  readonly label: string;
  readonly measured: Measurement;
  readonly extra: object;
  readonly sql: readonly string[];
  /** The replayed operation, and what the service answered to the recorded request. */
  readonly template: SqlTemplate;
  readonly response: { readonly method: HttpRequestSpec['method']; readonly status: number; readonly body: unknown };
}

/** Measures ceilings one at a time (so each can run right before the scenario it is compared to). */
export interface CeilingMeter {
  measure(spec: CeilingSpec): Promise<Ceiling>;
  close(): Promise<void>;
}

/**
 * Builds the in-process app the SQL is recorded from (rate limits off, logging off) over its
 * own one-connection pool. `measure` sends the spec's request once to warm caches, records
 * the SQL of a second one, and replays it.
 * @throws Error (from `measure`) when a recorded request does not succeed, or a replay does
 *   not touch the rows the recording did.
 */
export async function openCeilingMeter(run: CeilingRun): Promise<CeilingMeter> {
  const database = await openDatabase({ kind: 'postgres', url: run.databaseUrl, poolSize: 1 });
  const config = loadConfig({ DATABASE_URL: run.databaseUrl, SECRETS_KEY: TEST_SECRETS_KEY, RATE_LIMIT_PER_KEY: '0', LOG_LEVEL: 'silent' });
  const app = await buildApp(config, {
    checkWebhookUrl: webhookUrlCheck(config.webhooks),
    store: createStore(database.db, { keyRing: createKeyRing(generateSecretsKey()) }),
    idempotency: createIdempotencyStore(database.db),
    ping: database.ping,
    logger: false,
  });
  const send = async (spec: HttpRequestSpec) => {
    const response = await app.inject({
      method: spec.method,
      url: spec.path,
      headers: spec.headers,
      ...(spec.body ? { payload: spec.body } : {}),
    });
    if (response.statusCode >= 300) throw new Error(`${spec.method} ${spec.path} → ${response.statusCode} ${response.body}`);
    return { status: response.statusCode, body: response.body === '' ? undefined : (JSON.parse(response.body) as unknown) };
  };
  return {
    async measure(spec) {
      await send(spec.request());
      // Let the first request's fire-and-forget write (the key's last use) finish unrecorded.
      await new Promise((resolve) => setTimeout(resolve, 100));
      let recordedRequest: HttpRequestSpec | undefined;
      let response: Ceiling['response'] | undefined;
      const queries = await recordQueries(async () => {
        recordedRequest = spec.request();
        response = { method: recordedRequest.method, ...(await send(recordedRequest)) };
      });
      const template = toTemplate(queries, spec.email?.of(recordedRequest!));
      const { result: measured, extra } = await run.around(() =>
        replaySql(template, {
          url: run.databaseUrl,
          clients: run.clients,
          warmupSeconds: run.warmupSeconds,
          seconds: run.seconds,
          ...(spec.email ? { nextEmail: spec.email.next } : {}),
        }),
      );
      return { label: spec.label, measured, extra, sql: queries.map((q) => q.text), template, response: response! };
    },
    async close() {
      await app.close();
      await database.close();
    },
  };
}
