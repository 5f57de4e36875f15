import { envSchema } from 'env-schema';
import { Type, type Static } from '@sinclair/typebox';

/**
 * The environment variables wum reads, with their defaults and bounds.
 * Source: SPEC.md Part B, "Running", "Retries, limits and audit", "Operator interface".
 */
const EnvSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  BASE_DOMAIN: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9.-]+$', default: 'localhost' }),
  TRUST_PROXY: Type.Boolean({ default: false }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  ADMIN_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  RATE_LIMIT_PER_KEY: Type.Number({ minimum: 0, default: 100 }),
  RATE_LIMIT_BURST: Type.Number({ minimum: 0, default: 200 }),
  AUTH_FAILURE_LIMIT: Type.Integer({ minimum: 0, default: 20 }),
  LOG_LEVEL: Type.Unsafe<string>({
    type: 'string',
    enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
  }),
  SEED_DEMO: Type.Boolean({ default: true }),
});

type Env = Static<typeof EnvSchema>;

/** Where the data lives: a PostgreSQL server, or the embedded PGlite in a directory. */
export type StorageConfig =
  | { readonly kind: 'postgres'; readonly url: string; readonly poolSize: number }
  | { readonly kind: 'pglite'; readonly dataDir: string };

/**
 * The validated, frozen configuration of one wum process. Built once by {@link loadConfig};
 * nothing else reads `process.env`. Units: seconds for rates (`perSecond`), counts for bursts.
 */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** Lower-cased domain the workspace label stands in front of (SPEC.md Part B, Addressing). */
  readonly baseDomain: string;
  readonly trustProxy: boolean;
  readonly storage: StorageConfig;
  /** Bearer token of the admin API; `undefined` turns the admin API off. */
  readonly adminToken: string | undefined;
  /** Token bucket per API key; `perSecond` 0 turns it off. */
  readonly rateLimit: { readonly perSecond: number; readonly burst: number };
  /** Failed API key attempts allowed per client address and minute; 0 turns it off. */
  readonly authFailureLimit: number;
  readonly logLevel: string;
  /** Create the `demo` workspace when a new embedded database is created. */
  readonly seedDemo: boolean;
}

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
  const storage: StorageConfig = parsed.DATABASE_URL
    ? { kind: 'postgres', url: parsed.DATABASE_URL, poolSize: parsed.DATABASE_POOL_SIZE }
    : { kind: 'pglite', dataDir: parsed.DATA_DIR };
  return Object.freeze({
    port: parsed.PORT,
    host: parsed.HOST,
    baseDomain: parsed.BASE_DOMAIN.toLowerCase(),
    trustProxy: parsed.TRUST_PROXY,
    storage: Object.freeze(storage),
    adminToken: parsed.ADMIN_TOKEN,
    rateLimit: Object.freeze({ perSecond: parsed.RATE_LIMIT_PER_KEY, burst: parsed.RATE_LIMIT_BURST }),
    authFailureLimit: parsed.AUTH_FAILURE_LIMIT,
    logLevel: parsed.LOG_LEVEL,
    seedDemo: parsed.SEED_DEMO,
  });
}
