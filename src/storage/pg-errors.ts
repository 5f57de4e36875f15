import { AppError } from '../core/errors.ts';

/** Unique constraints whose violation is a domain conflict, by constraint name. */
const UNIQUE_VIOLATIONS: Record<string, () => AppError> = {
  users__workspace_email: () => new AppError('user_already_exists', 'An active user with this email already exists.'),
  workspaces__subdomain: () => new AppError('workspace_exists', 'A workspace with this subdomain already exists.'),
};

interface PgError {
  code?: string;
  constraint?: string;
}

/** The driver's error under Drizzle's wrapper (Drizzle puts it on `cause`). */
function driverError(error: unknown): PgError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const candidate = error as PgError & { cause?: unknown };
  if (typeof candidate.code === 'string') return candidate;
  return candidate.cause === undefined ? undefined : driverError(candidate.cause);
}

/**
 * Maps a database error to the domain's AppError by SQLSTATE and constraint name; returns
 * the error unchanged when it is not a known conflict. Source: DESIGN.md ("database errors
 * are mapped once, in storage/").
 */
export function mapDatabaseError(error: unknown): unknown {
  const pgError = driverError(error);
  if (pgError?.code === '23505' && pgError.constraint) {
    return UNIQUE_VIOLATIONS[pgError.constraint]?.() ?? error;
  }
  return error;
}
