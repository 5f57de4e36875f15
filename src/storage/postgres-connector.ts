import pg from 'pg';
import { parse as parseConnectionString } from 'pg-connection-string';
import { parseDatabaseUrl, type DatabaseHost, type TargetSessionAttrs } from '../config/database-url.ts';

/*
 * Every connection wum opens to PostgreSQL is made here: the request pool's, the migration
 * lock's, and those of long-lived clients (the cache listener, background workers). It reads
 * `DATABASE_URL` in libpq's multi-host form and connects only to a host that satisfies its
 * `target_session_attrs` (for wum, `read-write`: the current primary of a pg_auto_failover
 * group). node-postgres takes one host only, so the choice of host happens before the driver
 * connects: the last host found acceptable is tried first; when there is none (first use, or it
 * failed), every host is probed at once and the first acceptable answer wins, so a host that
 * is down (or a machine that no longer answers at all) costs no waiting once another answers.
 *
 * The same connections guard against what a failover does to sessions:
 * - a reply that does not come within `queryTimeoutMs` (a dead peer that sent no reset, or a
 *   commit blocked waiting for a synchronous standby that is gone, which `statement_timeout`
 *   does not cover) closes the connection, so the query fails at once instead of hanging;
 * - a write refused because the server became read-only (SQLSTATE 25006) or a commit the
 *   server reports as not replicated closes the connection and forgets the host;
 * - once another host is found to be the primary, connections to the old one are closed.
 * Errors of closed connections reach the caller through its query (and are answered 503 by
 * pg-errors.ts); a connection error never reaches the process as an unhandled 'error' event.
 */

/** How a connection or query failed for want of a usable primary (mapped to 503 by pg-errors.ts). */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';
  /**
   * SQLSTATE class 08 as libpq reports it: `08001` no acceptable host could be reached,
   * `08006` an open connection was given up (no reply in time, a primary that moved).
   */
  readonly code: '08001' | '08006';

  constructor(code: '08001' | '08006', message: string) {
    super(message);
    this.code = code;
  }
}

/** Settings of every connection of a {@link PostgresConnector}. Times in ms; 0 or absent: none. */
export interface ConnectorOptions {
  /** `DATABASE_URL`, one host or several (libpq form). */
  readonly url: string;
  /** Longest time to open one connection to one host (TCP, TLS, start-up, authentication). */
  readonly connectTimeoutMs?: number;
  /** PostgreSQL `statement_timeout` of every session (server side). */
  readonly statementTimeoutMs?: number;
  /** Longest wait for the reply to any one query, commit included (client side); then the connection is closed. */
  readonly queryTimeoutMs?: number;
}

/** Per-client overrides of {@link ConnectorOptions} for a client outside the pool. */
export interface ClientOptions {
  /** `application_name` of the session (shown in `pg_stat_activity`). */
  readonly applicationName?: string;
  /** Overrides the connector's `statementTimeoutMs` (0: none, e.g. while migrating). */
  readonly statementTimeoutMs?: number;
  /** Overrides the connector's `queryTimeoutMs` (0: none, e.g. waiting for the migration lock). */
  readonly queryTimeoutMs?: number;
}

/** Opens connections to the acceptable host of a (multi-host) `DATABASE_URL`. */
export interface PostgresConnector {
  readonly hosts: readonly DatabaseHost[];
  readonly targetSessionAttrs: TargetSessionAttrs;
  /** Options for `new pg.Pool(...)`: its connections are made by this connector. */
  poolConfig(max: number, extra?: pg.PoolConfig): pg.PoolConfig;
  /** A new connected client outside any pool, on an acceptable host; the caller ends it. */
  connect(options?: ClientOptions): Promise<pg.Client>;
  /** `host:port` of the host currently believed acceptable (the primary), if any. */
  current(): string | undefined;
}

/** The warning PostgreSQL sends when a commit stopped waiting for its synchronous standby. */
const UNREPLICATED_COMMIT = /wait for synchronous replication/i;
/** SQLSTATE of a write refused by a read-only server or transaction. */
const READ_ONLY_TRANSACTION = '25006';
/** TCP keep-alive probes start after this much idle time, so a vanished peer is noticed. */
const KEEP_ALIVE_DELAY_MS = 10_000;

const ignore = () => {};

/** An error raised when a COMMIT is answered ROLLBACK (SQLSTATE class 40, transaction rollback). */
class RolledBackError extends Error {
  override readonly name = 'RolledBackError';
  readonly code = '40000';
}

/**
 * PostgreSQL answers `COMMIT` of a transaction in which a statement failed with `ROLLBACK`,
 * not an error; a caller that swallowed that statement's error would take it for a commit.
 * Returns the error to raise instead, or undefined.
 */
function silentRollback(query: unknown, result: unknown): Error | undefined {
  const text = typeof query === 'string' ? query : (query as { text?: unknown } | undefined)?.text;
  if (typeof text !== 'string' || !/^\s*commit\s*;?\s*$/i.test(text)) return undefined;
  if ((result as { command?: unknown } | undefined)?.command !== 'ROLLBACK') return undefined;
  return new RolledBackError('COMMIT was answered ROLLBACK: a statement of the transaction had failed');
}

function label(host: DatabaseHost): string {
  return `${host.host}:${host.port}`;
}

/** Server settings the server reports at start-up and on change (ParameterStatus). */
function watchParameters(client: pg.Client): Map<string, string> {
  const parameters = new Map<string, string>();
  const connection = (client as unknown as { connection: NodeJS.EventEmitter }).connection;
  connection.on('parameterStatus', (message: { parameterName: string; parameterValue: string }) => {
    parameters.set(message.parameterName, message.parameterValue);
  });
  return parameters;
}

/**
 * Why the session on `client` does not satisfy `mode`, or undefined when it does. PostgreSQL
 * 14 and later report `in_hot_standby` and `default_transaction_read_only` at start-up, so no
 * query is needed; older servers are asked, as libpq does.
 */
async function refusal(client: pg.Client, parameters: Map<string, string>, mode: TargetSessionAttrs): Promise<string | undefined> {
  if (mode === 'any') return undefined;
  let standby = parameters.get('in_hot_standby');
  let readOnly = parameters.get('default_transaction_read_only');
  if (standby === undefined || readOnly === undefined) {
    const { rows } = await client.query<{ standby: boolean; read_only: string }>(
      "select pg_catalog.pg_is_in_recovery() as standby, pg_catalog.current_setting('transaction_read_only') as read_only",
    );
    standby = rows[0]?.standby ? 'on' : 'off';
    readOnly = rows[0]?.read_only ?? 'on';
  }
  if (standby === 'on') return 'a standby (in recovery)';
  if (mode === 'read-write' && readOnly === 'on') return 'read-only (default_transaction_read_only)';
  return undefined;
}

/**
 * Builds the connector of `options.url`. With one host and no `target_session_attrs` it
 * connects as node-postgres always did (no probe, no extra query). Source: libpq §34.1.1.3
 * "Specifying Multiple Hosts" and `target_session_attrs`; docs/contract.md Part B, "A highly available
 * database"; docs/operations.md, "PostgreSQL high availability".
 *
 * @throws DatabaseUrlError when `options.url` cannot be parsed.
 */
export function createConnector(options: ConnectorOptions): PostgresConnector {
  const url = parseDatabaseUrl(options.url);
  const mode = url.targetSessionAttrs;
  const hosts = url.hosts;
  const hostConfigs = url.hostUrls.map((hostUrl) => parseConnectionString(hostUrl) as pg.ClientConfig);
  const configOf = (host: DatabaseHost) => hostConfigs[hosts.indexOf(host)] ?? hostConfigs[0]!;
  const needsProbe = hosts.length > 1 || mode !== 'any';

  let primary: DatabaseHost | undefined = needsProbe ? undefined : hosts[0];
  let locating: Promise<DatabaseHost> | undefined;
  const open = new Set<PrimaryClient>();

  const sessionConfig = (overrides: ClientOptions = {}): pg.ClientConfig => {
    const statementTimeoutMs = overrides.statementTimeoutMs ?? options.statementTimeoutMs ?? 0;
    return {
      ...hostConfigs[0],
      ...(options.connectTimeoutMs ? { connectionTimeoutMillis: options.connectTimeoutMs } : {}),
      ...(statementTimeoutMs ? { statement_timeout: statementTimeoutMs } : {}),
      ...(overrides.applicationName ? { application_name: overrides.applicationName } : {}),
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEP_ALIVE_DELAY_MS,
    };
  };

  /** Connects a throw-away client to `host` and resolves with `host` when it is acceptable. */
  const probe = async (host: DatabaseHost): Promise<DatabaseHost> => {
    const client = new pg.Client({
      ...configOf(host),
      ...(options.connectTimeoutMs ? { connectionTimeoutMillis: options.connectTimeoutMs } : {}),
      application_name: 'wum-probe',
    });
    client.on('error', ignore);
    const parameters = watchParameters(client);
    try {
      await client.connect();
    } catch (error) {
      throw new Error(`${label(host)}: ${(error as Error).message}`, { cause: error });
    }
    try {
      const why = await refusal(client, parameters, mode);
      if (why) throw new Error(`${label(host)}: ${why}`);
      return host;
    } finally {
      // Not awaited: the answer is known; a slow goodbye must not delay it.
      client.end().catch(ignore);
    }
  };

  /** Closes the connections to any host other than `host` (they are to a former primary). */
  const discardOthers = (host: DatabaseHost) => {
    for (const client of open) {
      if (client.target && client.target !== host) {
        client.discard(new DatabaseUnavailableError('08006', `${label(client.target)} is no longer the primary`));
      }
    }
  };

  const locate = (): Promise<DatabaseHost> => {
    if (primary) return Promise.resolve(primary);
    locating ??= Promise.any(hosts.map(probe))
      .then(
        (found) => {
          primary = found;
          discardOthers(found);
          return found;
        },
        (error: AggregateError) => {
          const reasons = error.errors.map((e: Error) => e.message).join('; ');
          throw new DatabaseUnavailableError('08001', `no ${mode} PostgreSQL server among ${hosts.map(label).join(', ')} (${reasons})`);
        },
      )
      .finally(() => {
        locating = undefined;
      });
    return locating;
  };

  /** Forgets `host` as the primary, so the next connection probes every host again. */
  const forget = (host: DatabaseHost | undefined) => {
    if (needsProbe && host && primary === host) primary = undefined;
  };

  /**
   * A node-postgres client that connects to the acceptable host (pg.Pool builds these when
   * given it as `Client`) and enforces the guards described at the top of this file.
   */
  class PrimaryClient extends pg.Client {
    /** The host this client connected to. */
    target: DatabaseHost | undefined;
    /** Client-side limit on any query's reply, in ms (0: none). */
    queryTimeoutMs: number;
    private readonly parameters: Map<string, string>;
    private unreplicated = false;

    constructor(config: pg.ClientConfig & { wumQueryTimeoutMs?: number }) {
      super(config);
      this.queryTimeoutMs = config.wumQueryTimeoutMs ?? options.queryTimeoutMs ?? 0;
      this.parameters = watchParameters(this);
      // Errors reach callers through their queries; a checked-out client of the pool has no
      // other listener, and an 'error' without one would end the process.
      this.on('error', ignore);
      this.on('notice', (notice: { message?: string }) => {
        if (UNREPLICATED_COMMIT.test(notice.message ?? '')) this.unreplicated = true;
      });
      this.on('end', () => open.delete(this));
    }

    /** Closes the connection now; its queries fail with `error` and the pool drops it. */
    discard(error: Error): void {
      const stream = (this as unknown as { connection: { stream: { destroy(e?: Error): void } } }).connection.stream;
      stream.destroy(error);
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: (err: Error | null, client?: pg.Client) => void): void;
    override connect(callback?: (err: Error | null, client?: pg.Client) => void): Promise<pg.Client> | void {
      const connecting = this.connectToPrimary().then(() => this);
      if (!callback) return connecting;
      connecting.then((client) => callback(null, client), callback);
    }

    private async connectToPrimary(): Promise<void> {
      const host = await locate();
      const config = configOf(host);
      // node-postgres reads the host and port from these when it opens the socket.
      Object.assign(this, { host: config.host, port: Number(config.port) });
      Object.assign((this as unknown as { connectionParameters: object }).connectionParameters, {
        host: config.host,
        port: Number(config.port),
      });
      try {
        await super.connect();
      } catch (error) {
        forget(host);
        throw error;
      }
      const why = await refusal(this, this.parameters, mode).catch((error: Error) => error.message);
      if (why) {
        forget(host);
        this.end().catch(ignore);
        throw new DatabaseUnavailableError('08001', `${label(host)} is ${why}`);
      }
      this.target = host;
      open.add(this);
    }

    /** Runs the query with the guards: a reply deadline, read-only and unreplicated-commit checks. */
    override query(...args: unknown[]): never {
      const last = args[args.length - 1];
      const callback = typeof last === 'function' ? (last as (error: Error | null, result?: unknown) => void) : undefined;
      // Query objects (cursors, streams) report through their own events: passed as they are.
      if (typeof (args[0] as { submit?: unknown } | undefined)?.submit === 'function') {
        return (super.query as (...a: unknown[]) => never)(...args);
      }
      let timer: NodeJS.Timeout | undefined;
      if (this.queryTimeoutMs > 0) {
        timer = setTimeout(() => {
          this.discard(new DatabaseUnavailableError('08006', `no reply from ${this.target ? label(this.target) : 'PostgreSQL'} within ${this.queryTimeoutMs} ms`));
        }, this.queryTimeoutMs);
        timer.unref();
      }
      const settle = (error: unknown): unknown => {
        clearTimeout(timer);
        // Replies come in order: a warning seen since the last reply belongs to this query.
        const unreplicated = this.unreplicated;
        this.unreplicated = false;
        const code = (error as { code?: unknown } | undefined)?.code;
        if (code === READ_ONLY_TRANSACTION) {
          forget(this.target);
          this.discard(new DatabaseUnavailableError('08006', 'the server became read-only (no longer the primary)'));
        }
        if (!error && unreplicated) {
          forget(this.target);
          const lost = new DatabaseUnavailableError('08006', 'the commit was not confirmed by a synchronous standby');
          this.discard(lost);
          return lost;
        }
        return error;
      };
      if (callback) {
        const wrapped = (error: Error | null, result?: unknown) => {
          const outcome = (settle(error ?? undefined) ?? (error ? undefined : silentRollback(args[0], result))) as Error | undefined;
          callback(outcome ?? null, outcome ? undefined : result);
        };
        return (super.query as (...a: unknown[]) => never)(...args.slice(0, -1), wrapped);
      }
      const result = (super.query as (...a: unknown[]) => Promise<unknown>)(...args);
      return result.then(
        (value) => {
          // Without an error to pass on, settle answers an Error or nothing.
          const outcome = (settle(undefined) ?? silentRollback(args[0], value)) as Error | undefined;
          if (outcome) throw outcome;
          return value;
        },
        (error: unknown) => {
          throw settle(error);
        },
      ) as never;
    }
  }

  return {
    hosts,
    targetSessionAttrs: mode,
    poolConfig: (max, extra = {}) => ({
      ...sessionConfig(),
      ...extra,
      max,
      Client: PrimaryClient as unknown as typeof pg.Client,
    }),
    async connect(overrides = {}) {
      const client = new PrimaryClient({
        ...sessionConfig(overrides),
        ...(overrides.queryTimeoutMs === undefined ? {} : { wumQueryTimeoutMs: overrides.queryTimeoutMs }),
      });
      try {
        await client.connect();
      } catch (error) {
        client.end().catch(ignore);
        throw error;
      }
      return client;
    },
    current: () => (primary ? label(primary) : undefined),
  };
}
