/**
 * How long a console session is kept once it is over — signed out, past its absolute end, idle
 * too long — before the pruner deletes its row, in ms: one day, so a session that just ended can
 * still be looked at while the reason is fresh; the audit trail keeps its sign-in and sign-out
 * for `AUDIT_RETENTION` (docs/security.md, "Ended sessions are pruned"). Sign-ins under way are
 * deleted as soon as they expire.
 */
export const ENDED_SESSION_RETENTION_MS = 24 * 3_600_000;

/** Deletes console sessions and sign-ins under way that are over, batch by batch. */
export interface SessionPruning {
  /**
   * Deletes up to `batchSize` rows of sessions (workspaces' and operators') that have been over
   * for longer than `retentionMs` (a session is over `idleMs` after its last use, too), and of
   * sign-ins under way that have expired; resolves with how many it deleted.
   */
  prune(retentionMs: number, idleMs: number, batchSize: number): Promise<number>;
}
