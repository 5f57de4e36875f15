import type { Store } from '../ports.ts';
import type { WorkspaceEvent } from './event.ts';

/**
 * The workspace's events with a sequence above `after`, at most `limit` (1–1000, checked by
 * the caller's schema), in sequence order: the pull feed, and the way to recover what a
 * webhook receiver missed. Source: docs/contract.md Part B, Events and webhooks.
 */
export async function listEvents(store: Store, workspaceId: number, after: number, limit: number): Promise<WorkspaceEvent[]> {
  return store.events.findAfter(workspaceId, after, limit);
}
