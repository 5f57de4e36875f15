import type { Actor } from '../actor.ts';
import type { PageRequest, Slice } from '../pagination.ts';

/*
 * The audit trail as the domain stores it: its entries, the filters of a listing and its port
 * (storage/audit.queries.ts).
 */

/** One entry of the audit trail. `before`/`after` are wire-shaped snapshots or null. */
export interface AuditEvent {
  readonly id: number;
  readonly workspaceId: number | null;
  readonly occurredAt: Date;
  readonly actor: Actor;
  readonly action: string;
  readonly targetType: string;
  readonly targetId: string;
  /** The `id` of the user the event is about (user events only), kept across renames. */
  readonly userId?: string | null;
  readonly before: unknown;
  readonly after: unknown;
}

/** What a change writes to the audit trail (the store adds id and time). */
export type AuditEntry = Omit<AuditEvent, 'id' | 'occurredAt'>;

/** Filters of an audit listing; each one given narrows it (AND). */
export interface AuditFilter {
  readonly action?: string;
  readonly actorType?: string;
  readonly targetId?: string;
  /** Only the events of this user (its `id`). */
  readonly userId?: string;
  /** Only the events that occurred at or after this instant (inclusive). */
  readonly since?: Date;
  /** Only the events that occurred before this instant (exclusive). */
  readonly until?: Date;
  /** Newest first instead of oldest first. */
  readonly newestFirst?: boolean;
}

/** Where a keyset read of the audit trail resumes: past this event id, in the listing's order. */
export interface AuditKeyset {
  /** The id of the last event already read; the read returns the events after it in the listing's order. */
  readonly afterId?: number;
  /** No event with a larger id (an export fixes the end of the trail when it starts). */
  readonly maxId?: number;
}

/** The audit trail. */
export interface AuditRepository {
  append(entry: AuditEntry): Promise<void>;
  /** A page of events, oldest first unless `filter.newestFirst`; `workspaceId` null means every event. */
  findPage(workspaceId: number | null, page: PageRequest, filter?: AuditFilter): Promise<Slice<AuditEvent>>;
  /**
   * Up to `limit` events past `keyset.afterId` (and up to `keyset.maxId`) in the order of
   * `filter`, without a count: a page read by cursor, or a batch of an export.
   */
  findBatch(workspaceId: number | null, limit: number, filter: AuditFilter, keyset: AuditKeyset): Promise<AuditEvent[]>;
  /** The largest event id written so far, 0 when the trail is empty. */
  lastId(): Promise<number>;
}
