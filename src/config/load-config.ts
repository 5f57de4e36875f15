import { getHeapStatistics } from 'node:v8';
import { envSchema } from 'env-schema';
import { Type, type Static } from '@sinclair/typebox';
import ipaddr from 'ipaddr.js';
import { DatabaseUrlError, parseDatabaseUrl } from './database-url.ts';
import { isLoopbackUrl } from './loopback.ts';
import { foldEmail, isAsciiEmail } from '../core/users/email.ts';
import { parse as parseIsoDuration } from 'tinyduration';
import type { RetentionPeriod } from '../core/audit/audit-retention.ts';
import { durationSeconds } from '../core/lifecycle/duration.ts';
import type { PolicyLimits } from '../core/lifecycle/policy.ts';

/**
 * The environment variables wum reads, with their defaults and bounds.
 * Source: docs/contract.md Part B, "Running", "Retries, limits and audit", "Operator interface";
 * docs/operations.md, "Limits" (timeouts, sizes, load shedding; documented in docs/operations.md).
 */
const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  BASE_DOMAIN: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9.-]+$', default: 'localhost' }),
  TRUST_PROXY: Type.Boolean({ default: false }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  WORKERS: Type.Integer({ minimum: 1, maximum: 64, default: 1 }),
  CACHE_TTL_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 5000 }),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 5000 }),
  DATABASE_CONNECT_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 5000 }),
  DATABASE_QUERY_TIMEOUT_MS: Type.Optional(Type.Integer({ minimum: 0 })),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 30_000 }),
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 10_000 }),
  CONNECTION_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 60_000 }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 60_000 }),
  IDLE_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 30_000 }),
  MAX_CONNECTIONS: Type.Integer({ minimum: 0, default: 10_000 }),
  MAX_HEADER_BYTES: Type.Integer({ minimum: 1024, maximum: 1_048_576, default: 16_384 }),
  MAX_URL_LENGTH: Type.Integer({ minimum: 256, default: 4096 }),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 10_000 }),
  SHED_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 1000 }),
  SHED_EVENT_LOOP_UTILIZATION: Type.Number({ minimum: 0, maximum: 1, default: 0 }),
  SHED_HEAP_USED_MB: Type.Optional(Type.Integer({ minimum: 0 })),
  SHED_RSS_MB: Type.Integer({ minimum: 0, default: 0 }),
  SHED_RETRY_AFTER_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 10 }),
  SHED_SAMPLE_INTERVAL_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 5000 }),
  ADMIN_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  RATE_LIMIT_PER_KEY: Type.Number({ minimum: 0, default: 100 }),
  RATE_LIMIT_BURST: Type.Number({ minimum: 0, default: 200 }),
  AUTH_FAILURE_LIMIT: Type.Integer({ minimum: 0, default: 20 }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  REDIS_TIMEOUT_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 250 }),
  LOG_LEVEL: Type.Unsafe<string>({
    type: 'string',
    enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
  }),
  SEED_DEMO: Type.Boolean({ default: true }),
  OUTBOUND_ALLOWED_NETWORKS: Type.Optional(Type.String()),
  WEBHOOK_ALLOW_HTTP: Type.Boolean({ default: false }),
  WEBHOOK_ALLOWED_NETWORKS: Type.Optional(Type.String()),
  WEBHOOK_LOOPBACK_ONLY: Type.Boolean({ default: false }),
  WEBHOOK_RETRY_SCHEDULE: Type.String({ default: '5s,5m,30m,2h,5h,10h,10h' }),
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 15_000 }),
  WEBHOOK_CONCURRENCY_PER_ENDPOINT: Type.Integer({ minimum: 1, maximum: 100, default: 10 }),
  WEBHOOK_POLL_INTERVAL_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 200 }),
  WEBHOOK_WORKER: Type.Boolean({ default: true }),
  EVENTS_PRUNE_INTERVAL_MS: Type.Integer({ minimum: 1000, default: 3_600_000 }),
  EMBEDDED_MAINTENANCE: Type.Boolean({ default: true }),
  EMBEDDED_MAINTENANCE_INTERVAL_MS: Type.Integer({ minimum: 100, default: 5_000 }),
  EMBEDDED_ANALYZE_SCALE_FACTOR: Type.Number({ minimum: 0, maximum: 100, default: 0.1 }),
  EMBEDDED_VACUUM_SCALE_FACTOR: Type.Number({ minimum: 0, maximum: 100, default: 0.2 }),
  SESSION_IDLE_MINUTES: Type.Number({ exclusiveMinimum: 0, maximum: 43_200, default: 480 }),
  SESSION_MAX_HOURS: Type.Number({ exclusiveMinimum: 0, maximum: 8760, default: 168 }),
  CONSOLE_KEY_SIGN_IN: Type.Unsafe<'auto' | 'always' | 'never'>({ type: 'string', enum: ['auto', 'always', 'never'], default: 'auto' }),
  OPERATOR_OIDC_ISSUER: Type.Optional(Type.String({ pattern: '^https?://' })),
  OPERATOR_OIDC_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  OPERATOR_OIDC_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  OPERATOR_EMAILS: Type.Optional(Type.String()),
  // Bounds on the operator surface, sign-ins, sessions and the audit trail (docs/security.md, "Hardening controls").
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  SIGN_IN_START_LIMIT: Type.Integer({ minimum: 0, default: 60 }),
  SIGN_IN_START_LIMIT_PER_WORKSPACE: Type.Integer({ minimum: 0, default: 600 }),
  SESSIONS_PER_PRINCIPAL_MAX: Type.Integer({ minimum: 0, default: 10 }),
  AUDIT_RETENTION: Type.String({ minLength: 1, default: 'P365D' }),
  SECRETS_KEY: Type.Optional(Type.String()),
  SECRETS_KEY_PREVIOUS: Type.Optional(Type.String()),
  // Access that ends on time (docs/contract.md Part B): the shortest duration a policy accepts.
  POLICY_MIN_DURATION: Type.String({ minLength: 2, default: 'P1D' }),
  // Audit streams (docs/operations.md, "Audit streams"): how long a stream may fail before it is paused.
  AUDIT_STREAM_PAUSE_AFTER: Type.String({ minLength: 2, default: 'PT24H' }),
});

type Env = Static<typeof EnvSchema>;

/** Where the data lives: a PostgreSQL server, or the embedded PGlite in a directory. */
export type StorageConfig =
  | {
      readonly kind: 'postgres';
      readonly url: string;
      readonly poolSize: number;
      /** Server-side `statement_timeout` of every pooled connection, in ms; 0 or absent: none. */
      readonly statementTimeoutMs?: number;
      /** Longest wait for a pooled connection (or a new one), in ms; 0 or absent: forever. */
      readonly connectTimeoutMs?: number;
      /**
       * Longest wait for the reply to any one statement, commit included, in ms (client side:
       * the connection is then closed); 0 or absent: none. Covers what `statement_timeout`
       * does not: a commit waiting for a synchronous standby, a server that vanished silently.
       */
      readonly queryTimeoutMs?: number;
    }
  | { readonly kind: 'pglite'; readonly dataDir: string };

/**
 * Limits of the HTTP server, in milliseconds and bytes. A timeout of 0 turns it off.
 * Source: docs/operations.md, "Limits"; Node's `http.Server` timeouts.
 */
export interface HttpLimits {
  /** Time to receive a whole request, headers and body (Node `requestTimeout`) → 408. */
  readonly requestTimeoutMs: number;
  /** Time to receive the request headers (Node `headersTimeout`, slow-loris guard) → 408. */
  readonly headersTimeoutMs: number;
  /** Socket inactivity while a request is open (Fastify `connectionTimeout`): the socket is closed. */
  readonly connectionTimeoutMs: number;
  /** How long an idle keep-alive connection is kept open (Node `keepAliveTimeout`). */
  readonly keepAliveTimeoutMs: number;
  /** How long a new connection may stay silent before its first byte; then it is closed (0: no limit). */
  readonly idleTimeoutMs: number;
  /** Most open connections of this process; more are closed as they arrive (Node `maxConnections`; 0: no cap). */
  readonly maxConnections: number;
  /** Largest request line plus headers (Node `maxHeaderSize`) → 431. */
  readonly maxHeaderBytes: number;
  /** Longest request target (path and query), in characters → 414. */
  readonly maxUrlLength: number;
  /** Time given to requests in flight after SIGTERM/SIGINT before the process exits anyway. */
  readonly shutdownTimeoutMs: number;
}

/**
 * When the process sheds load (`503 service_unavailable` with `Retry-After`) instead of
 * taking more work: thresholds checked by `@fastify/under-pressure` against measures sampled
 * every `sampleIntervalMs`; 0 turns a threshold off.
 */
export interface LoadShedding {
  /**
   * Mean event-loop delay over the last sample window, in ms. Over a 5 s window a single
   * pause (a GC, a slow start) hardly moves the mean; a loop that is late on every turn does.
   */
  readonly maxEventLoopDelayMs: number;
  /** Event-loop utilisation, 0–1. */
  readonly maxEventLoopUtilization: number;
  /** V8 heap in use, in bytes. */
  readonly maxHeapUsedBytes: number;
  /** Resident set size, in bytes. */
  readonly maxRssBytes: number;
  /** `Retry-After` of a shed request, in seconds. */
  readonly retryAfterSeconds: number;
  /** How often the measures are sampled (and the window the event-loop mean covers), in ms. */
  readonly sampleIntervalMs: number;
}

/**
 * What every outbound connection made on configuration's say (webhooks, identity providers)
 * may reach: docs/security.md, "Outbound connections".
 */
export interface OutboundPolicy {
  /** `http://` URLs are accepted, to loopback addresses only (`WEBHOOK_ALLOW_HTTP`). */
  readonly allowHttp: boolean;
  /**
   * CIDR ranges that may be reached although they are not public unicast addresses (private,
   * loopback, link-local, …), e.g. `10.20.0.0/16`; empty: public addresses only
   * (`OUTBOUND_ALLOWED_NETWORKS`, or its older name `WEBHOOK_ALLOWED_NETWORKS`).
   */
  readonly allowedNetworks: readonly string[];
  /**
   * Every outbound connection outside 127.0.0.0/8 and ::1 is refused, whatever the other rules
   * allow (`WEBHOOK_LOOPBACK_ONLY`): set by the test harness and benchmarks so that no test
   * can send traffic off the machine (docs/security.md, "Tests stay on the machine").
   */
  readonly loopbackOnly?: boolean;
}

/**
 * Webhook delivery (docs/contract.md Part B, Events and webhooks; documented in docs/operations.md and
 * docs/security.md). Its `allowHttp`, `allowedNetworks` and `loopbackOnly` are those of
 * {@link Config.outbound}: one policy for every outbound connection.
 */
export interface WebhookConfig extends OutboundPolicy {
  readonly loopbackOnly: boolean;
  /** Delays before each retry, in ms; after the last one fails, the delivery fails. */
  readonly retryScheduleMs: readonly number[];
  /** Longest wait for a receiver's response, in ms (docs/contract.md: 15 s). */
  readonly timeoutMs: number;
  /** Deliveries this process sends to one endpoint at a time. */
  readonly concurrencyPerEndpoint: number;
  /** How often an idle worker looks for due deliveries, in ms. */
  readonly pollIntervalMs: number;
  /** Whether this process runs the delivery worker (and the event pruning). */
  readonly worker: boolean;
  /** How often old events are pruned, in ms. */
  readonly pruneIntervalMs: number;
}

/** Units of a `WEBHOOK_RETRY_SCHEDULE` entry, in ms. */
const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses `5s,5m,2h` into ms; throws ConfigError on anything else. */
function parseSchedule(value: string): number[] {
  return value.split(',').map((part) => {
    const match = /^\s*(\d+)(ms|s|m|h)\s*$/.exec(part);
    if (!match) throw new ConfigError(`invalid configuration: WEBHOOK_RETRY_SCHEDULE must be durations like 5s,5m,2h (got "${part}")`);
    return Number(match[1]) * DURATION_UNITS[match[2]!]!;
  });
}

/** Parses a comma-separated list of CIDR ranges; throws ConfigError naming `name` and a bad one. */
function parseNetworks(name: string, value: string): string[] {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      if (!ipaddr.isValidCIDR(part)) throw new ConfigError(`invalid configuration: ${name} has "${part}", not a CIDR range`);
      return part;
    });
}

/**
 * The outbound policy of the parsed settings. `WEBHOOK_ALLOWED_NETWORKS` is the older name of
 * `OUTBOUND_ALLOWED_NETWORKS`; both at once is refused rather than one silently winning.
 * @throws ConfigError naming both settings, or a range that is not CIDR.
 */
function outboundPolicy(parsed: Env): Readonly<Required<OutboundPolicy>> {
  if (parsed.OUTBOUND_ALLOWED_NETWORKS !== undefined && parsed.WEBHOOK_ALLOWED_NETWORKS !== undefined) {
    throw new ConfigError('invalid configuration: set OUTBOUND_ALLOWED_NETWORKS or WEBHOOK_ALLOWED_NETWORKS (its older name), not both');
  }
  const [name, value] =
    parsed.WEBHOOK_ALLOWED_NETWORKS === undefined
      ? ['OUTBOUND_ALLOWED_NETWORKS', parsed.OUTBOUND_ALLOWED_NETWORKS ?? '']
      : ['WEBHOOK_ALLOWED_NETWORKS', parsed.WEBHOOK_ALLOWED_NETWORKS];
  return Object.freeze({
    allowHttp: parsed.WEBHOOK_ALLOW_HTTP,
    allowedNetworks: Object.freeze(parseNetworks(name, value)),
    loopbackOnly: parsed.WEBHOOK_LOOPBACK_ONLY,
  });
}

/**
 * When and how often the embedded store analyzes and vacuums itself
 * (storage/embedded-maintenance.ts); autovacuum's defaults unless set.
 */
export interface MaintenanceSettings {
  /** Pause between two looks at the statistics when nothing was due, in ms. */
  readonly intervalMs: number;
  /** Fraction of a table's rows that, changed since its last analyze (plus 50), makes it due for ANALYZE. */
  readonly analyzeScaleFactor: number;
  /** Fraction of a table's rows that, dead (plus 50), makes it due for VACUUM. */
  readonly vacuumScaleFactor: number;
}

/**
 * The validated, frozen configuration of one wum process. Built once by {@link loadConfig};
 * nothing else reads `process.env`. Units: seconds for rates (`perSecond`), counts for bursts.
 */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** Lower-cased domain the workspace label stands in front of (docs/contract.md Part B, Addressing). */
  readonly baseDomain: string;
  readonly trustProxy: boolean;
  readonly storage: StorageConfig;
  /**
   * Processes serving the port (node:cluster), each with its own database pool; 1 = this
   * process serves alone. Above 1 only with PostgreSQL (docs/operations.md, "Replicas and scaling").
   */
  readonly workers: number;
  /**
   * How long a process serves verified API keys and the product catalogue from memory, in
   * ms; 0 = never. Bounds how long a key revoked through another server stays usable here.
   */
  readonly cacheTtlMs: number;
  /** Bearer token of the admin API; `undefined` turns the admin API off. */
  readonly adminToken: string | undefined;
  /** Token bucket per API key; `perSecond` 0 turns it off. */
  readonly rateLimit: { readonly perSecond: number; readonly burst: number };
  /** Failed API key attempts allowed per client address and minute; 0 turns it off. */
  readonly authFailureLimit: number;
  /**
   * Redis shared by the replicas for the rate limits (docs/contract.md Part B, "Running several
   * replicas"); `undefined`: each process limits alone. `timeoutMs` bounds each Redis command
   * (and a connection attempt): past it, or while Redis is unreachable, the limits fail open.
   */
  readonly redis: { readonly url: string; readonly timeoutMs: number } | undefined;
  /** Timeouts and size limits of the HTTP server. */
  readonly http: HttpLimits;
  /** Thresholds past which requests are refused with 503 instead of queued. */
  readonly loadShedding: LoadShedding;
  readonly logLevel: string;
  /** Create the `demo` workspace when a new embedded database is created. */
  readonly seedDemo: boolean;
  /** What outbound connections (webhooks, identity providers) may reach. */
  readonly outbound: Readonly<Required<OutboundPolicy>>;
  /** Webhook delivery and event retention. */
  readonly webhooks: WebhookConfig;
  /**
   * The embedded store's own ANALYZE and VACUUM (storage/embedded-maintenance.ts); undefined
   * when switched off (`EMBEDDED_MAINTENANCE=false`). Used with PGlite only: PostgreSQL has
   * autovacuum. docs/operations.md, "The embedded store maintains itself".
   */
  readonly embeddedMaintenance: MaintenanceSettings | undefined;
  /** Console sessions (docs/security.md, "Console sessions"). */
  readonly sessions: SessionConfig;
  /**
   * The operators' sign-in to the console with an identity provider (docs/security.md,
   * "Operators signing in"); undefined when `OPERATOR_OIDC_ISSUER` is not set.
   */
  readonly operatorSignIn: OperatorSignInConfig | undefined;
  /** Bounds on the operator surface, sign-ins, sessions and the audit trail. */
  readonly bounds: BoundsConfig;
  /** The key-encryption keys of secrets at rest (docs/security.md, "Secrets at rest"). */
  readonly secrets: SecretsKeyConfig;
  /**
   * The access policies (docs/contract.md Part B, "Access that ends on time"): `POLICY_MIN_DURATION`,
   * the shortest `deactivate_after` or `warn_before` accepted (ISO 8601, default `P1D`; tests use seconds).
   */
  readonly policies: PolicyLimits;
  /** Audit streams (docs/operations.md, "Audit streams"). */
  readonly auditStreams: AuditStreamsConfig;
}

/** Audit streams' settings. */
export interface AuditStreamsConfig {
  /** How long a stream may fail without a success before it is paused, in ms (`AUDIT_STREAM_PAUSE_AFTER`, ISO 8601, default `PT24H`). */
  readonly pauseAfterMs: number;
}

/**
 * `AUDIT_STREAM_PAUSE_AFTER` read as a positive duration of fixed length (weeks to seconds).
 * @throws ConfigError naming the setting.
 */
function auditStreamsConfig(text: string): AuditStreamsConfig {
  const seconds = durationSeconds(text.trim());
  if (seconds === undefined || seconds <= 0) {
    throw new ConfigError(`invalid configuration: AUDIT_STREAM_PAUSE_AFTER must be a positive ISO 8601 duration in weeks, days, hours, minutes or seconds (e.g. PT24H, PT3S), not "${text}"`);
  }
  return Object.freeze({ pauseAfterMs: Math.round(seconds * 1000) });
}

/** Bounds on what anonymous clients and keys can make the server keep or show (docs/security.md, "Hardening controls"). */
export interface BoundsConfig {
  /** `METRICS_TOKEN`: a bearer token that opens `/metrics` on a workspace's host; undefined: only the operator host serves it. */
  readonly metricsToken: string | undefined;
  /** Sign-in starts allowed per client address and minute (`SIGN_IN_START_LIMIT`); 0: no limit. */
  readonly signInStartsPerAddress: number;
  /** Sign-in starts allowed per workspace (the operator's sign-in counts as one) and minute; 0: no limit. */
  readonly signInStartsPerWorkspace: number;
  /** How long audit rows are kept (`AUDIT_RETENTION`, ISO 8601, default `P365D`). */
  readonly auditRetention: RetentionPeriod;
}

/**
 * Parses `AUDIT_RETENTION`: a positive ISO 8601 duration (`P365D`, `P1Y`, `P18M`, `PT12H`), only
 * its seconds may be fractional.
 * @throws ConfigError naming the setting.
 */
function parseRetention(value: string): RetentionPeriod {
  const refuse = () => new ConfigError(`invalid configuration: AUDIT_RETENTION must be a positive ISO 8601 duration such as P365D or P1Y (got "${value}")`);
  let duration: ReturnType<typeof parseIsoDuration>;
  try {
    duration = parseIsoDuration(value.trim());
  } catch {
    throw refuse();
  }
  const { years = 0, months = 0, weeks = 0, days = 0, hours = 0, minutes = 0, seconds = 0 } = duration;
  const whole = [years, months, weeks, days, hours, minutes];
  if (duration.negative || !whole.every(Number.isSafeInteger) || [...whole, seconds].every((part) => part === 0)) throw refuse();
  return Object.freeze({ years, months, weeks, days, hours, minutes, seconds });
}

/** The {@link BoundsConfig} of the parsed settings. @throws ConfigError on a bad `AUDIT_RETENTION`. */
function boundsConfig(parsed: Env): BoundsConfig {
  return Object.freeze({
    metricsToken: parsed.METRICS_TOKEN,
    signInStartsPerAddress: parsed.SIGN_IN_START_LIMIT,
    signInStartsPerWorkspace: parsed.SIGN_IN_START_LIMIT_PER_WORKSPACE,
    auditRetention: parseRetention(parsed.AUDIT_RETENTION),
  });
}

/**
 * `SECRETS_KEY` and `SECRETS_KEY_PREVIOUS`, decoded: 32 bytes each. `key` is undefined only
 * with the embedded store, which then keeps a generated key in its data directory.
 */
export interface SecretsKeyConfig {
  /** Encrypts new secrets and decrypts. */
  readonly key: Buffer | undefined;
  /** Decrypts only: the key being rotated away from (docs/operations.md, "Rotating the secrets key"). */
  readonly previousKey: Buffer | undefined;
}

/** Bytes of a `SECRETS_KEY` (AES-256). */
const SECRETS_KEY_LENGTH = 32;

/** Decodes a base64 key of 32 bytes; throws ConfigError naming `name` (never echoing the value). */
function secretsKey(name: string, value: string | undefined): Buffer | undefined {
  if (value === undefined) return undefined;
  const key = /^[A-Za-z0-9+/]+={0,2}$/.test(value.trim()) ? Buffer.from(value.trim(), 'base64') : Buffer.alloc(0);
  if (key.length !== SECRETS_KEY_LENGTH) {
    throw new ConfigError(`invalid configuration: ${name} must be ${SECRETS_KEY_LENGTH} random bytes in base64 (e.g. the output of: openssl rand -base64 32)`);
  }
  return key;
}

/**
 * The secrets keys of the parsed settings: `SECRETS_KEY` is required with `DATABASE_URL`,
 * since every replica must encrypt and decrypt with the same key; `SECRETS_KEY_PREVIOUS`
 * only beside a `SECRETS_KEY`. Source: docs/operations.md, "The secrets key".
 * @throws ConfigError naming the variable.
 */
function secretsKeys(parsed: Env): SecretsKeyConfig {
  const key = secretsKey('SECRETS_KEY', parsed.SECRETS_KEY);
  const previousKey = secretsKey('SECRETS_KEY_PREVIOUS', parsed.SECRETS_KEY_PREVIOUS);
  if (!key && parsed.DATABASE_URL) {
    throw new ConfigError(
      'invalid configuration: SECRETS_KEY is required with DATABASE_URL: 32 random bytes in base64 (openssl rand -base64 32) that encrypt stored secrets; every replica needs the same key',
    );
  }
  if (previousKey && !key) throw new ConfigError('invalid configuration: SECRETS_KEY_PREVIOUS is set but SECRETS_KEY is not; set the new key in SECRETS_KEY');
  return Object.freeze({ key, previousKey });
}

/** The operator identity provider and who may sign in with it. */
export interface OperatorSignInConfig {
  /** `OPERATOR_OIDC_ISSUER`: the OpenID Provider's issuer URL (https, or http on loopback). */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** `OPERATOR_EMAILS`, in their canonical form (trimmed, ASCII letters folded): the only emails let in. */
  readonly emails: ReadonlySet<string>;
}

/** The three settings naming the operator identity provider: all of them or none. */
const OPERATOR_OIDC_SETTINGS = ['OPERATOR_OIDC_ISSUER', 'OPERATOR_OIDC_CLIENT_ID', 'OPERATOR_OIDC_CLIENT_SECRET'] as const;

/**
 * The operator sign-in of the parsed settings: all three OIDC settings or none, and with them a
 * non-empty `OPERATOR_EMAILS` (comma-separated, ASCII; trimmed, letters folded); http only for a
 * loopback issuer and only with `WEBHOOK_ALLOW_HTTP` (as the outbound guard allows;
 * docs/security.md, "Outbound connections").
 * @throws ConfigError naming what is missing or wrong.
 */
function operatorSignIn(parsed: Env): OperatorSignInConfig | undefined {
  const missing = OPERATOR_OIDC_SETTINGS.filter((name) => parsed[name] === undefined);
  if (missing.length === OPERATOR_OIDC_SETTINGS.length) {
    if (parsed.OPERATOR_EMAILS !== undefined) throw new ConfigError('invalid configuration: OPERATOR_EMAILS is set but OPERATOR_OIDC_ISSUER is not; set the operator identity provider or remove OPERATOR_EMAILS');
    return undefined;
  }
  if (missing.length > 0) {
    throw new ConfigError(`invalid configuration: the operator sign-in needs ${OPERATOR_OIDC_SETTINGS.join(', ')} together; missing ${missing.join(', ')}`);
  }
  const listed = (parsed.OPERATOR_EMAILS ?? '').split(',').map((email) => email.trim()).filter((email) => email !== '');
  const notAscii = listed.filter((email) => !isAsciiEmail(email));
  if (notAscii.length > 0) {
    throw new ConfigError(`invalid configuration: OPERATOR_EMAILS must list ASCII email addresses only (docs/security.md, "One spelling of an email"); not: ${notAscii.join(', ')}`);
  }
  const emails = listed.map(foldEmail);
  if (emails.length === 0) throw new ConfigError('invalid configuration: OPERATOR_EMAILS must list the emails that may sign in as operator (comma-separated) when OPERATOR_OIDC_ISSUER is set');
  const issuer = URL.parse(parsed.OPERATOR_OIDC_ISSUER!);
  if (!issuer) throw new ConfigError('invalid configuration: OPERATOR_OIDC_ISSUER must be a URL, e.g. https://login.example.com');
  if (issuer.protocol === 'http:' && !(isLoopbackUrl(issuer) && parsed.WEBHOOK_ALLOW_HTTP)) {
    throw new ConfigError('invalid configuration: OPERATOR_OIDC_ISSUER must be an https:// URL (http:// only for a loopback issuer, with WEBHOOK_ALLOW_HTTP=true)');
  }
  return Object.freeze({
    issuer: parsed.OPERATOR_OIDC_ISSUER!,
    clientId: parsed.OPERATOR_OIDC_CLIENT_ID!,
    clientSecret: parsed.OPERATOR_OIDC_CLIENT_SECRET!,
    emails: new Set(emails),
  });
}

/** How long console sessions live, and whether a workspace key may open one. */
export interface SessionConfig {
  /** A session unused this long ends, in ms (`SESSION_IDLE_MINUTES`, default 8 h). */
  readonly idleMs: number;
  /** A session ends this long after sign-in whatever its use, in ms (`SESSION_MAX_HOURS`, default 7 days). */
  readonly maxMs: number;
  /**
   * `CONSOLE_KEY_SIGN_IN`: `auto` (default) lets a workspace API key open a console session
   * unless the workspace signs in through an identity provider; `always` allows it even then;
   * `never` forbids it everywhere.
   */
  readonly keySignIn: 'auto' | 'always' | 'never';
  /** Live sessions kept per key, per person and per operator (`SESSIONS_PER_PRINCIPAL_MAX`); past it the oldest end. 0: no cap. */
  readonly maxPerPrincipal: number;
}

/**
 * Default heap threshold of load shedding: 90 % of V8's heap limit (`--max-old-space-size`),
 * a level a healthy process never reaches and past which it would soon die of heap exhaustion.
 */
function defaultHeapThreshold(): number {
  return Math.floor(getHeapStatistics().heap_size_limit * 0.9);
}

/**
 * Default client-side reply limit: the statement timeout plus one second, so the server's own
 * cancellation (a clean 57014) comes first and the client's only when the server is silent or a
 * commit waits for a standby; none when the statement timeout is off.
 */
function defaultQueryTimeout(statementTimeoutMs: number): number {
  return statementTimeoutMs > 0 ? statementTimeoutMs + QUERY_TIMEOUT_MARGIN_MS : 0;
}

/** How much longer than the statement timeout the client waits for a reply by default. */
const QUERY_TIMEOUT_MARGIN_MS = 1000;

/** Thrown by {@link loadConfig} when a variable is malformed; `message` names each variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Parses and validates the environment into a {@link Config}.
 *
 * @param env - the variables to read (normally `process.env`); empty strings count as unset.
 * @returns a frozen Config.
 * @throws ConfigError naming every invalid variable, e.g. `PORT must be integer`.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const data = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  let parsed: Env;
  try {
    parsed = envSchema<Env>({ schema: EnvSchema, data, env: false, dotenv: false });
  } catch (error) {
    throw new ConfigError(`invalid configuration: ${(error as Error).message.replaceAll('env/', '')}`);
  }
  if (parsed.REQUEST_TIMEOUT_MS > 0 && parsed.HEADERS_TIMEOUT_MS > parsed.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('invalid configuration: HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS');
  }
  if (parsed.WORKERS > 1 && !parsed.DATABASE_URL) {
    throw new ConfigError(
      `invalid configuration: WORKERS=${parsed.WORKERS} needs DATABASE_URL; the embedded PGlite database (DATA_DIR) serves one process, so use WORKERS=1 with it`,
    );
  }
  if (parsed.DATABASE_URL) {
    try {
      parseDatabaseUrl(parsed.DATABASE_URL);
    } catch (error) {
      if (error instanceof DatabaseUrlError) throw new ConfigError(`invalid configuration: ${error.message}`);
      throw error;
    }
  }
  const storage: StorageConfig = parsed.DATABASE_URL
    ? {
        kind: 'postgres',
        url: parsed.DATABASE_URL,
        poolSize: parsed.DATABASE_POOL_SIZE,
        statementTimeoutMs: parsed.DATABASE_STATEMENT_TIMEOUT_MS,
        connectTimeoutMs: parsed.DATABASE_CONNECT_TIMEOUT_MS,
        queryTimeoutMs: parsed.DATABASE_QUERY_TIMEOUT_MS ?? defaultQueryTimeout(parsed.DATABASE_STATEMENT_TIMEOUT_MS),
      }
    : { kind: 'pglite', dataDir: parsed.DATA_DIR };
  const mebibytes = (n: number) => n * 1024 * 1024;
  const outbound = outboundPolicy(parsed);
  return Object.freeze({
    port: parsed.PORT,
    host: parsed.HOST,
    baseDomain: parsed.BASE_DOMAIN.toLowerCase(),
    trustProxy: parsed.TRUST_PROXY,
    storage: Object.freeze(storage),
    workers: parsed.WORKERS,
    cacheTtlMs: parsed.CACHE_TTL_MS,
    adminToken: parsed.ADMIN_TOKEN,
    rateLimit: Object.freeze({ perSecond: parsed.RATE_LIMIT_PER_KEY, burst: parsed.RATE_LIMIT_BURST }),
    authFailureLimit: parsed.AUTH_FAILURE_LIMIT,
    redis: parsed.REDIS_URL ? Object.freeze({ url: parsed.REDIS_URL, timeoutMs: parsed.REDIS_TIMEOUT_MS }) : undefined,
    http: Object.freeze({
      requestTimeoutMs: parsed.REQUEST_TIMEOUT_MS,
      headersTimeoutMs: parsed.HEADERS_TIMEOUT_MS,
      connectionTimeoutMs: parsed.CONNECTION_TIMEOUT_MS,
      keepAliveTimeoutMs: parsed.KEEP_ALIVE_TIMEOUT_MS,
      idleTimeoutMs: parsed.IDLE_TIMEOUT_MS,
      maxConnections: parsed.MAX_CONNECTIONS,
      maxHeaderBytes: parsed.MAX_HEADER_BYTES,
      maxUrlLength: parsed.MAX_URL_LENGTH,
      shutdownTimeoutMs: parsed.SHUTDOWN_TIMEOUT_MS,
    }),
    loadShedding: Object.freeze({
      maxEventLoopDelayMs: parsed.SHED_EVENT_LOOP_DELAY_MS,
      maxEventLoopUtilization: parsed.SHED_EVENT_LOOP_UTILIZATION,
      maxHeapUsedBytes:
        parsed.SHED_HEAP_USED_MB === undefined ? defaultHeapThreshold() : mebibytes(parsed.SHED_HEAP_USED_MB),
      maxRssBytes: mebibytes(parsed.SHED_RSS_MB),
      retryAfterSeconds: parsed.SHED_RETRY_AFTER_SECONDS,
      sampleIntervalMs: parsed.SHED_SAMPLE_INTERVAL_MS,
    }),
    logLevel: parsed.LOG_LEVEL,
    seedDemo: parsed.SEED_DEMO,
    outbound,
    webhooks: Object.freeze({
      ...outbound,
      retryScheduleMs: Object.freeze(parseSchedule(parsed.WEBHOOK_RETRY_SCHEDULE)),
      timeoutMs: parsed.WEBHOOK_TIMEOUT_MS,
      concurrencyPerEndpoint: parsed.WEBHOOK_CONCURRENCY_PER_ENDPOINT,
      pollIntervalMs: parsed.WEBHOOK_POLL_INTERVAL_MS,
      worker: parsed.WEBHOOK_WORKER,
      pruneIntervalMs: parsed.EVENTS_PRUNE_INTERVAL_MS,
    }),
    embeddedMaintenance: parsed.EMBEDDED_MAINTENANCE
      ? Object.freeze({
          intervalMs: parsed.EMBEDDED_MAINTENANCE_INTERVAL_MS,
          analyzeScaleFactor: parsed.EMBEDDED_ANALYZE_SCALE_FACTOR,
          vacuumScaleFactor: parsed.EMBEDDED_VACUUM_SCALE_FACTOR,
        })
      : undefined,
    sessions: Object.freeze({
      idleMs: Math.round(parsed.SESSION_IDLE_MINUTES * 60_000),
      maxMs: Math.round(parsed.SESSION_MAX_HOURS * 3_600_000),
      keySignIn: parsed.CONSOLE_KEY_SIGN_IN,
      maxPerPrincipal: parsed.SESSIONS_PER_PRINCIPAL_MAX,
    }),
    operatorSignIn: operatorSignIn(parsed),
    bounds: boundsConfig(parsed),
    secrets: secretsKeys(parsed),
    policies: Object.freeze({ minDuration: policyMinDuration(parsed.POLICY_MIN_DURATION) }),
    auditStreams: auditStreamsConfig(parsed.AUDIT_STREAM_PAUSE_AFTER),
  });
}

/**
 * `POLICY_MIN_DURATION` read as a duration of fixed length.
 * @throws ConfigError when it is none (or uses years or months).
 */
function policyMinDuration(text: string): PolicyLimits['minDuration'] {
  const seconds = durationSeconds(text);
  if (seconds === undefined || seconds <= 0) {
    throw new ConfigError(`invalid configuration: POLICY_MIN_DURATION must be a positive ISO 8601 duration in weeks, days, hours, minutes or seconds (e.g. P1D, PT1S), not "${text}"`);
  }
  return Object.freeze({ text, seconds });
}
