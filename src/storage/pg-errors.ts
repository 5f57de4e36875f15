import { AppError, databaseUnavailable, TRANSIENT_RETRY_AFTER_SECONDS } from '../core/errors.ts';

export { databaseUnavailable, TRANSIENT_RETRY_AFTER_SECONDS } from '../core/errors.ts';

/** Unique constraints whose violation is a domain conflict, by constraint name. */
const UNIQUE_VIOLATIONS: Record<string, () => AppError> = {
  users__workspace_email: () => new AppError('user_already_exists', 'An active user with this email already exists.'),
  workspaces__subdomain: () => new AppError('workspace_exists', 'A workspace with this subdomain already exists.'),
  scim_groups__workspace_role: () => new AppError('group_exists', 'This product role is linked as a group already.'),
  user_import_jobs__one_active: () =>
    new AppError('import_in_progress', 'An import of this workspace is queued or running; wait for it or cancel it.'),
};

/**
 * Foreign keys from tenant tables to `workspaces` (Drizzle's names): violated when a write
 * races the deletion of its workspace, or comes through another process that still holds
 * the deleted workspace's key in its read cache (at most CACHE_TTL_MS).
 */
const WORKSPACE_REFERENCE = /_workspace_id_workspaces_id_fk$/;

/**
 * SQLSTATEs that say "busy, not now" rather than "never": the statement was cancelled
 * (`57014`, e.g. by `statement_timeout`), the server has no connection slot left (`53300`), or a
 * transaction lost a serialization or deadlock race (`40001`, `40P01`) or a lock wait
 * (`55P03`). The transaction was rolled back, so the request can safely be retried.
 * Source: PostgreSQL, Appendix A "PostgreSQL Error Codes".
 */
const BUSY_SQLSTATES = new Set(['57014', '53300', '40001', '40P01', '55P03']);
/**
 * SQLSTATEs that say "this server cannot take the request": it is shutting down or starting
 * (`57P01`–`57P03`), it is read-only (`25006`: a standby, or a former primary), or the
 * connection failed (class `08`, also what postgres-connector.ts reports when no host is
 * acceptable or a reply did not come in time).
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '25006']);
/** Socket errors of the driver when the database cannot be reached. */
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** The driver's own errors without a code: a connection that ended, or was unusable. */
const UNAVAILABLE_MESSAGES = /Connection terminated|is not queryable|timeout expired/i;
/** pg-pool's error when no connection was free (or could be opened) within the connect timeout. */
const BUSY_POOL_MESSAGES = /timeout exceeded when trying to connect/i;

interface PgError {
  code?: string;
  constraint?: string;
  message?: string;
}

/** The error and its `cause` chain (Drizzle puts the driver's error on `cause`). */
function* causes(error: unknown): Generator<PgError> {
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 10; depth++) {
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}

/** The driver's error under Drizzle's wrapper: the first in the chain with a string `code`. */
function driverError(error: unknown): PgError | undefined {
  for (const candidate of causes(error)) if (typeof candidate.code === 'string') return candidate;
  return undefined;
}

/** Which 503 a database error is, if it is one: busy, or no server able to take the request. */
function transientKind(error: unknown): 'busy' | 'unavailable' | undefined {
  const code = driverError(error)?.code;
  if (code !== undefined) {
    if (BUSY_SQLSTATES.has(code)) return 'busy';
    if (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08') || UNAVAILABLE_SOCKET_CODES.has(code)) return 'unavailable';
  }
  for (const candidate of causes(error)) {
    if (typeof candidate.message !== 'string') continue;
    if (UNAVAILABLE_MESSAGES.test(candidate.message)) return 'unavailable';
    if (BUSY_POOL_MESSAGES.test(candidate.message)) return 'busy';
  }
  return undefined;
}

/**
 * True when `error` means the database could not serve the request now but may shortly:
 * a statement timeout, a full pool, a lost race, or no server able to take it (unreachable,
 * restarting, read-only, a connection lost).
 */
export function isTransientDatabaseError(error: unknown): boolean {
  return transientKind(error) !== undefined;
}

/**
 * Maps a database error to the domain's AppError: known unique violations by constraint
 * name to their conflict codes, a write to a deleted workspace to `404 workspace_not_found`,
 * transient failures ({@link isTransientDatabaseError}) to `503 service_unavailable` (busy) or
 * `503 database_unavailable` (no server could take the request: during a failover, a restart,
 * a network failure), both with `Retry-After`, never a 500. Returns any other error unchanged.
 * Source: docs/architecture.md ("database errors are mapped once, in storage/"); docs/security.md (a statement
 * timeout is a 503, not a 500); docs/contract.md Part B, "A highly available database".
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
  const retryAfter = { 'retry-after': String(TRANSIENT_RETRY_AFTER_SECONDS) };
  switch (transientKind(error)) {
    case 'busy':
      return new AppError('service_unavailable', 'The database is busy; retry shortly.', undefined, retryAfter);
    case 'unavailable':
      return databaseUnavailable();
    default:
      return error;
  }
}
