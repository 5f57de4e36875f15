import type { Store } from '../ports.ts';
import type { ActivityResult } from '../users/user-repository.ts';

/**
 * Records when people were last active (`POST /users/activity`): each user's `last_active_at`
 * moves forward to the latest time reported for its email, never back; emails no user of the
 * workspace has are returned, not refused (a product may report people wum does not manage).
 * No version, audit row or event: activity is not a change of the user.
 * Source: docs/contract.md Part B, "Access that ends on time".
 */
export function recordActivity(store: Store, workspaceId: number, reports: ReadonlyArray<{ readonly email: string; readonly at: Date }>): Promise<ActivityResult> {
  return store.users.recordActivity(workspaceId, reports);
}
