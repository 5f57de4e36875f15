import type { Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Repositories, Store } from '../ports.ts';
import { policyDuration } from './duration.ts';
import type { ExpiryPolicy, InactivityPolicy, InactivityScope, PolicyDuration, PolicyLimits } from './policy.ts';

/*
 * A workspace's access policies (docs/contract.md Part B, "Access that ends on time"): the
 * inactivity policy, and the warning sent before a membership's expiry. Durations are kept as
 * the client wrote them (so `GET` answers what `PUT` took) and in seconds (what the scheduler
 * compares with).
 */

/** A policy as a client writes it (the wire's top-level fields). */
export interface InactivityPolicyInput {
  readonly deactivateAfter: string;
  readonly appliesTo: InactivityScope;
  readonly warnBefore: string | null;
}

/** The audit snapshot of an inactivity policy: its fields as the API shows them. */
const inactivitySnapshot = (policy: InactivityPolicy | null | undefined) =>
  policy ? { deactivate_after: policy.deactivateAfter.text, applies_to: policy.appliesTo, warn_before: policy.warnBefore?.text ?? null } : null;

/** The audit snapshot of an expiry policy. */
const expirySnapshot = (policy: ExpiryPolicy | undefined) => ({ warn_before: policy?.warnBefore?.text ?? null });

/**
 * Records a policy change in the audit trail, in the change's transaction: a policy can
 * deactivate many people at once, so who set it, and to what, is evidence
 * (docs/security.md, "Audit trail").
 */
function auditPolicy(tx: Repositories, workspaceId: number, actor: Actor, action: string, policy: 'inactivity' | 'expiry', before: unknown, after: unknown) {
  return tx.audit.append({ workspaceId, actor, action, targetType: 'policy', targetId: policy, before, after });
}

/** A duration read against the limits. */
function duration(text: string, field: string, limits: PolicyLimits): PolicyDuration {
  return { text, seconds: policyDuration(text, field, limits.minDuration.seconds, limits.minDuration.text) };
}

/**
 * Replaces the workspace's inactivity policy (audited as `inactivity_policy.set`, with `actor`).
 * @throws AppError `invalid_duration` (422) for a duration that is not one, or shorter than the
 *   limit; the warning must also be shorter than `deactivate_after`.
 */
export async function putInactivityPolicy(store: Store, workspaceId: number, input: InactivityPolicyInput, limits: PolicyLimits, actor: Actor): Promise<InactivityPolicy> {
  const deactivateAfter = duration(input.deactivateAfter, 'deactivate_after', limits);
  const warnBefore = input.warnBefore === null ? null : duration(input.warnBefore, 'warn_before', limits);
  if (warnBefore && warnBefore.seconds >= deactivateAfter.seconds) {
    throw new AppError('invalid_duration', 'warn_before must be shorter than deactivate_after.', [
      { field: 'warn_before', message: 'must be shorter than deactivate_after' },
    ]);
  }
  const policy: InactivityPolicy = { deactivateAfter, appliesTo: input.appliesTo, warnBefore };
  await store.transaction(async (tx) => {
    const before = (await tx.policies.find(workspaceId))?.inactivity;
    await tx.policies.putInactivity(workspaceId, policy);
    await auditPolicy(tx, workspaceId, actor, 'inactivity_policy.set', 'inactivity', inactivitySnapshot(before), inactivitySnapshot(policy));
  });
  return policy;
}

/**
 * The workspace's inactivity policy.
 * @throws AppError `policy_not_found` (404) when it has none.
 */
export async function getInactivityPolicy(store: Store, workspaceId: number): Promise<InactivityPolicy> {
  const policy = (await store.policies.find(workspaceId))?.inactivity;
  if (!policy) throw new AppError('policy_not_found', 'This workspace has no inactivity policy.');
  return policy;
}

/**
 * Removes the workspace's inactivity policy (audited as `inactivity_policy.removed`).
 * @throws AppError `policy_not_found` (404) when it has none.
 */
export async function deleteInactivityPolicy(store: Store, workspaceId: number, actor: Actor): Promise<void> {
  await store.transaction(async (tx) => {
    const before = (await tx.policies.find(workspaceId))?.inactivity;
    if (!(await tx.policies.putInactivity(workspaceId, null))) {
      throw new AppError('policy_not_found', 'This workspace has no inactivity policy.');
    }
    await auditPolicy(tx, workspaceId, actor, 'inactivity_policy.removed', 'inactivity', inactivitySnapshot(before), null);
  });
}

/** The workspace's expiry policy (`warn_before` null when never set). */
export async function getExpiryPolicy(store: Store, workspaceId: number): Promise<ExpiryPolicy> {
  return (await store.policies.find(workspaceId))?.expiry ?? { warnBefore: null };
}

/**
 * Replaces the workspace's expiry policy (audited as `expiry_policy.set`).
 * @throws AppError `invalid_duration` (422).
 */
export async function putExpiryPolicy(store: Store, workspaceId: number, warnBefore: string | null, limits: PolicyLimits, actor: Actor): Promise<ExpiryPolicy> {
  const policy: ExpiryPolicy = { warnBefore: warnBefore === null ? null : duration(warnBefore, 'warn_before', limits) };
  await store.transaction(async (tx) => {
    const before = (await tx.policies.find(workspaceId))?.expiry;
    await tx.policies.putExpiry(workspaceId, policy);
    await auditPolicy(tx, workspaceId, actor, 'expiry_policy.set', 'expiry', expirySnapshot(before), expirySnapshot(policy));
  });
  return policy;
}
