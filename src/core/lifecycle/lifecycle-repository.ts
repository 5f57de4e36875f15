/*
 * What the lifecycle sweep claims: the users due and the port (storage/lifecycle.queries.ts).
 */

/** A user a policy's change is due for, and the instant it was due. */
export interface DueUser {
  readonly workspaceId: number;
  /** The user's public id. */
  readonly userId: string;
  readonly dueAt: Date;
}

/** A warning due: the user, when its access ends and why. */
export interface DueWarning extends DueUser {
  readonly reason: 'expired' | 'inactive';
}

/**
 * What the scheduler finds due at `now` (docs/contract.md Part B, "Access that ends on time").
 * The claims row-lock the users they return until the caller's transaction ends and skip those
 * another transaction holds (`FOR UPDATE SKIP LOCKED`), so replicas share a sweep and never
 * change one user twice; each returns at most `limit` users, earliest due first.
 */
export interface LifecycleRepository {
  /** Active users past `expires_at`, except a deferred last owner while it is still the last one. */
  claimExpired(now: Date, limit: number): Promise<DueUser[]>;
  /** Active users the workspace's inactivity policy has made due, with the same exception. */
  claimInactive(now: Date, limit: number): Promise<DueUser[]>;
  /** Users holding a grant past its `expires_at` (`dueAt`: the earliest such). */
  claimExpiredGrants(now: Date, limit: number): Promise<DueUser[]>;
  /** Warnings due at `now` not yet recorded for their due instant (no lock: the mark is the guard). */
  findWarnings(now: Date, limit: number): Promise<DueWarning[]>;
  /** The earliest instant after `now` at which anything becomes due; undefined when nothing will. */
  nextDue(now: Date): Promise<Date | undefined>;
}
