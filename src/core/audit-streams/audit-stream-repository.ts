import type { AuditEvent } from '../audit/audit-repository.ts';
import type { AuditStream, AuditStreamChanges, NewAuditStream, StreamLag } from './audit-stream.ts';

/*
 * Audit streams as the domain stores them: which streams a call sees, a row as a stream sends it,
 * and the port (storage/audit-streams.queries.ts); the worker's queue is in stream-queue.ts.
 */

/**
 * Which streams a call may see: one workspace's (its own API), or every stream (the operator's).
 * A workspace never sees an operator's stream of every workspace.
 */
export type StreamScope = { readonly workspaceId: number } | 'all';

/** An audit row as a stream sends it: the row, and its workspace's subdomain (null: the operator's). */
export interface StreamedAuditEvent extends AuditEvent {
  readonly workspace: string | null;
}

/** Audit streams (storage/audit-streams.queries.ts). */
export interface AuditStreamRepository {
  /**
   * Stores a new stream whose cursor is the greatest audit id now (it sends the rows written
   * after its creation); `credentials` are stored encrypted.
   */
  insert(stream: NewAuditStream): Promise<AuditStream>;
  /** The stream `id` if `scope` sees it; `lock` holds its row until commit. */
  find(scope: StreamScope, id: string, options?: { lock?: boolean }): Promise<AuditStream | undefined>;
  /** Every stream `scope` sees, oldest first. */
  findAll(scope: StreamScope): Promise<AuditStream[]>;
  /** The stream's lag: rows after its cursor (of its workspace and actions) and the age of the oldest, in seconds. */
  lag(stream: AuditStream): Promise<StreamLag>;
  /**
   * Applies `changes` (credentials encrypted). Resuming clears the failure streak and makes the
   * stream due now; any change of what is sent, or a pause, voids a claim in flight, so a batch
   * sent by the old settings does not move the cursor.
   */
  update(id: string, changes: AuditStreamChanges): Promise<AuditStream>;
  /**
   * Moves the cursor back to just before the first row at or after `from` (never forward), due
   * now, voiding a claim in flight. Returns the stream and the time of the oldest audit row
   * kept of its workspace (null when none: retention may have removed older ones).
   */
  rewind(id: string, from: Date): Promise<{ stream: AuditStream; oldestKept: Date | null }>;
  delete(id: string): Promise<void>;
  /** The encrypted credentials of a stream (for a test send). */
  credentials(id: string): Promise<string | undefined>;
  /**
   * Pauses every stream failing since before `failingBefore` (row-locked, skipping those
   * another transaction holds) and returns them as they are now.
   */
  pauseFailing(failingBefore: Date): Promise<AuditStream[]>;
}
