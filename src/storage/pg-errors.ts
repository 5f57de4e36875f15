import { AppError } from '../core/errors.ts';

/** Unique constraints whose violation is a domain conflict, by constraint name. */
const UNIQUE_VIOLATIONS: Record<string, () => AppError> = {
  users__workspace_email: () => new AppError('user_already_exists', 'An active user with this email already exists.'),
  workspaces__subdomain: () => new AppError('workspace_exists', 'A workspace with this subdomain already exists.'),
};

/**
 * Foreign keys from tenant tables to `workspaces` (Drizzle's names): violated when a write
 * races the deletion of its workspace, or comes through another process that still holds
 * the deleted workspace's key in its read cache (at most CACHE_TTL_MS).
 */
const WORKSPACE_REFERENCE = /_workspace_id_workspaces_id_fk$/;

/**
 * SQLSTATEs that say "not now" rather than "never": the statement was cancelled
 * (`57014`, e.g. by `statement_timeout`), the server is shutting down or refusing
 * connections (`57P01`–`57P03`, `53300`), the connection broke (class `08`), or a
 * transaction lost a serialization or deadlock race (`40001`, `40P01`) or a lock wait
 * (`55P03`). The transaction was rolled back, so the request can safely be retried.
 * Source: PostgreSQL, Appendix A "PostgreSQL Error Codes".
 */
const TRANSIENT_SQLSTATES = new Set(['57014', '57P01', '57P02', '57P03', '53300', '40001', '40P01', '55P03']);
/** Socket errors of the driver when the database cannot be reached. */
const TRANSIENT_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);
/** pg-pool's own errors carry no code: a full pool (`connectionTimeoutMillis`) or a dropped connection. */
const TRANSIENT_POOL_MESSAGES = /timeout exceeded when trying to connect|Connection terminated/i;
/** Seconds a client should wait before retrying after a transient database error. */
export const TRANSIENT_RETRY_AFTER_SECONDS = 1;

interface PgError {
  code?: string;
  constraint?: string;
  message?: string;
}

/** The error and its `cause` chain (Drizzle puts the driver's error on `cause`). */
function* causes(error: unknown): Generator<PgError> {
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 10; depth++) {
    yield current as PgError;
    current = (current as { cause?: unknown }).cause;
  }
}

/** The driver's error under Drizzle's wrapper: the first in the chain with a string `code`. */
function driverError(error: unknown): PgError | undefined {
  for (const candidate of causes(error)) if (typeof candidate.code === 'string') return candidate;
  return undefined;
}

/**
 * True when `error` means the database could not serve the request now but may shortly:
 * a statement timeout, a full pool, an unreachable or restarting server, a lost race.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  const code = driverError(error)?.code;
  if (code !== undefined && (TRANSIENT_SQLSTATES.has(code) || code.startsWith('08') || TRANSIENT_SOCKET_CODES.has(code))) {
    return true;
  }
  for (const candidate of causes(error)) {
    if (typeof candidate.message === 'string' && TRANSIENT_POOL_MESSAGES.test(candidate.message)) return true;
  }
  return false;
}

/**
 * Maps a database error to the domain's AppError: known unique violations by constraint
 * name to their conflict codes, a write to a deleted workspace to `404 workspace_not_found`,
 * and transient failures ({@link isTransientDatabaseError})
 * to `503 service_unavailable` with `Retry-After`, never a 500. Returns any other error
 * unchanged. Source: DESIGN.md ("database errors are mapped once, in storage/"); issue 4
 * (a statement timeout is a 503, not a 500).
 */
export function mapDatabaseError(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const pgError = driverError(error);
  if (pgError?.code === '23505' && pgError.constraint) {
    return UNIQUE_VIOLATIONS[pgError.constraint]?.() ?? error;
  }
  if (pgError?.code === '23503' && pgError.constraint && WORKSPACE_REFERENCE.test(pgError.constraint)) {
    return new AppError('workspace_not_found', 'The workspace no longer exists.');
  }
  if (isTransientDatabaseError(error)) {
    return new AppError('service_unavailable', 'The database is busy or unavailable; retry shortly.', undefined, {
      'retry-after': String(TRANSIENT_RETRY_AFTER_SECONDS),
    });
  }
  return error;
}
