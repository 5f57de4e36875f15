import type { Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Repositories, Store } from '../ports.ts';
import type { DueUser } from './lifecycle-repository.ts';
import type { UserNotice } from '../users/user-repository.ts';
import type { PolicyReason, UserNoticeType } from '../users/user.ts';
import { deactivateUser, updateUser } from '../users/users-service.ts';
import { auditSnapshot } from '../users/wire-user.ts';

/*
 * What the scheduler does when something is due (docs/contract.md Part B, "Access that ends on
 * time"). Each batch is one transaction: the claim row-locks its users (skipping those another
 * replica holds), and each is changed through the same domain path as a request (a
 * deactivation exactly as `DELETE /users/{email}`, a grant's removal as a `PATCH` of its apps),
 * so the rules, the audit row and the event are those of any other change. A crash before the
 * commit leaves every user of the batch due, to be done by the next sweep; after it, none is.
 */

/** Which policy acts: the actor's `id`. */
export type PolicyName = 'expiry' | 'inactivity' | 'grant_expiry';

/** The actor of every change a policy makes (docs/security.md, "Actors"). */
export function policyActor(policy: PolicyName): Actor {
  return { type: 'policy', id: policy, label: `${policy.replace('_', ' ')} policy`, requestId: null };
}

/** The store as seen from inside the transaction `tx`: the domain's own transactions join it. */
function joined(tx: Repositories, store: Store): Store {
  return {
    ...tx,
    transaction: (work) => work(tx),
    mapError: (error) => store.mapError(error),
    openSecret: (stored) => store.openSecret(stored),
    reencryptSecrets: (which) => store.reencryptSecrets(which),
  };
}

/** A notice about `due`'s user, with its audit entry (the user as it is, and why). */
async function notice(
  tx: Repositories,
  due: DueUser,
  type: UserNoticeType,
  mark: UserNotice['mark'],
  reason: PolicyReason,
  actor: Actor,
): Promise<boolean> {
  const user = await tx.users.find(due.workspaceId, { id: due.userId });
  if (!user) return false;
  return tx.users.recordNotice(due.workspaceId, due.userId, {
    type,
    mark,
    reason,
    dueAt: due.dueAt,
    audit: {
      workspaceId: due.workspaceId,
      actor,
      action: type,
      targetType: 'user',
      targetId: user.email,
      userId: user.id,
      before: null,
      after: { ...auditSnapshot(user.id, user), reason, ends_at: due.dueAt.toISOString() },
    },
  });
}

/**
 * Ends the membership of each user `claim` returns, as `DELETE` would, with `policy` as the
 * actor and `reason` in the event; the last active owner is left active and its deferral
 * recorded once (`user.expiry_deferred`). One transaction.
 * @returns how many users the claim returned (a full batch means more may be due).
 */
async function endMemberships(
  store: Store,
  claim: (tx: Repositories) => Promise<DueUser[]>,
  policy: 'expiry' | 'inactivity',
  reason: 'expired' | 'inactive',
): Promise<number> {
  const actor = policyActor(policy);
  return store.transaction(async (tx) => {
    const due = await claim(tx);
    const inside = joined(tx, store);
    for (const user of due) {
      try {
        // The claim holds the row: it is still active and due; the check guards the contract anyway.
        await deactivateUser(inside, user.workspaceId, { id: user.userId }, actor, { reason, onlyIf: (current) => current.status === 'active' });
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'last_owner') throw error;
        await notice(tx, user, 'user.expiry_deferred', policy === 'expiry' ? 'deferred_expiry' : 'deferred_inactivity', reason, actor);
      }
    }
    return due.length;
  });
}

/** Deactivates up to `limit` users whose `expires_at` is at or before `now` (reason `expired`). */
export function expireMemberships(store: Store, now: Date, limit: number): Promise<number> {
  return endMemberships(store, (tx) => tx.lifecycle.claimExpired(now, limit), 'expiry', 'expired');
}

/** Deactivates up to `limit` users the inactivity policy of their workspace has made due (reason `inactive`). */
export function deactivateInactive(store: Store, now: Date, limit: number): Promise<number> {
  return endMemberships(store, (tx) => tx.lifecycle.claimInactive(now, limit), 'inactivity', 'inactive');
}

/**
 * Removes the grants past their `expires_at` of up to `limit` users: one `user.updated` per
 * user (its grants due together are one change), reason `grant_expired`.
 */
export function expireGrants(store: Store, now: Date, limit: number): Promise<number> {
  const actor = policyActor('grant_expiry');
  return store.transaction(async (tx) => {
    const due = await tx.lifecycle.claimExpiredGrants(now, limit);
    const inside = joined(tx, store);
    for (const user of due) {
      await updateUser(
        inside,
        user.workspaceId,
        { id: user.userId },
        (current) => ({ apps: current.apps.filter((app) => !(app.expiresAt && app.expiresAt <= now)) }),
        actor,
        { reason: 'grant_expired' },
      );
    }
    return due.length;
  });
}

/**
 * Records up to `limit` warnings due at `now` (`user.access_expiring`, once per user and due
 * instant: a second replica's attempt finds the mark and records nothing).
 * @returns how many warnings it looked at.
 */
export async function sendWarnings(store: Store, now: Date, limit: number): Promise<number> {
  const due = await store.lifecycle.findWarnings(now, limit);
  for (const warning of due) {
    const policy = warning.reason === 'expired' ? 'expiry' : 'inactivity';
    await store.transaction((tx) =>
      notice(tx, warning, 'user.access_expiring', policy === 'expiry' ? 'warned_expiry' : 'warned_inactivity', warning.reason, policyActor(policy)),
    );
  }
  return due.length;
}
