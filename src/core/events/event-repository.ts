import type { EventAppend, WorkspaceEvent } from './event.ts';

/*
 * The outbox of events as the domain reads and prunes it: the feed's port and the pruning
 * port (storage/events.queries.ts implements both); the event is in event.ts.
 */

/** The outbox of events (users' and audit streams'), read as the workspace's feed. */
export interface EventRepository extends EventAppend {
  /** Up to `limit` events of the workspace with a sequence above `after`, in sequence order. */
  findAfter(workspaceId: number, after: number, limit: number): Promise<WorkspaceEvent[]>;
}

/** Deletes events past their retention, batch by batch. */
export interface EventPruning {
  /**
   * Deletes up to `batchSize` events created more than `retentionDays` days ago (with their
   * deliveries), oldest first; resolves with how many it deleted.
   */
  prune(retentionDays: number, batchSize: number): Promise<number>;
}
