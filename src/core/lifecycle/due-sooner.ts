import type { UserChangeType, UserWrite } from '../users/user.ts';

/**
 * Whether writing `user` (recorded as `eventType`) can bring the next due instant of access
 * that ends on time nearer than the one the sweep sleeps until, so that it must look again:
 * an active user holding an end (of its membership or of a grant), or a reactivated one (its
 * inactivity counts from its last activity, which may be long past). Any other write only
 * moves due instants later or takes them away (a deactivation, a new user's inactivity counted
 * from now, a change of names), which a sweep finds harmlessly at its next turn. Source:
 * docs/contract.md Part B, "Access that ends on time".
 * @param user - the user as written.
 * @param eventType - the change recorded with it (`user.reactivated` for a reactivation).
 * @returns true when the sweep must read the next due instant again.
 */
export function mayBeDueSooner(user: UserWrite, eventType: UserChangeType): boolean {
  if (user.status !== 'active') return false;
  return eventType === 'user.reactivated' || user.expiresAt !== null || user.apps.some((app) => app.expiresAt);
}
