/**
 * How long audit rows are kept (`AUDIT_RETENTION`, an ISO 8601 duration): its parts, whole
 * years to minutes and possibly fractional seconds, as PostgreSQL's `make_interval` takes them,
 * so a year stays a calendar year (docs/operations.md, "Retention of the audit trail").
 */
export interface RetentionPeriod {
  readonly years: number;
  readonly months: number;
  readonly weeks: number;
  readonly days: number;
  readonly hours: number;
  readonly minutes: number;
  readonly seconds: number;
}

/** Deletes audit rows past the retention, batch by batch (every row: workspaces', operators' and sessions'). */
export interface AuditPruning {
  /** Deletes up to `batchSize` audit rows older than `retention`; resolves with how many it deleted. */
  prune(retention: RetentionPeriod, batchSize: number): Promise<number>;
}
