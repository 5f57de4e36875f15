import { AppError } from '../errors.ts';
import type { Store } from '../ports.ts';
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

/** A duration read against the limits. */
function duration(text: string, field: string, limits: PolicyLimits): PolicyDuration {
  return { text, seconds: policyDuration(text, field, limits.minDuration.seconds, limits.minDuration.text) };
}

/**
 * Replaces the workspace's inactivity policy.
 * @throws AppError `invalid_duration` (422) for a duration that is not one, or shorter than the
 *   limit; the warning must also be shorter than `deactivate_after`.
 */
export async function putInactivityPolicy(store: Store, workspaceId: number, input: InactivityPolicyInput, limits: PolicyLimits): Promise<InactivityPolicy> {
  const deactivateAfter = duration(input.deactivateAfter, 'deactivate_after', limits);
  const warnBefore = input.warnBefore === null ? null : duration(input.warnBefore, 'warn_before', limits);
  if (warnBefore && warnBefore.seconds >= deactivateAfter.seconds) {
    throw new AppError('invalid_duration', 'warn_before must be shorter than deactivate_after.', [
      { field: 'warn_before', message: 'must be shorter than deactivate_after' },
    ]);
  }
  const policy: InactivityPolicy = { deactivateAfter, appliesTo: input.appliesTo, warnBefore };
  await store.policies.putInactivity(workspaceId, policy);
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
 * Removes the workspace's inactivity policy.
 * @throws AppError `policy_not_found` (404) when it has none.
 */
export async function deleteInactivityPolicy(store: Store, workspaceId: number): Promise<void> {
  if (!(await store.policies.putInactivity(workspaceId, null))) {
    throw new AppError('policy_not_found', 'This workspace has no inactivity policy.');
  }
}

/** The workspace's expiry policy (`warn_before` null when never set). */
export async function getExpiryPolicy(store: Store, workspaceId: number): Promise<ExpiryPolicy> {
  return (await store.policies.find(workspaceId))?.expiry ?? { warnBefore: null };
}

/**
 * Replaces the workspace's expiry policy.
 * @throws AppError `invalid_duration` (422).
 */
export async function putExpiryPolicy(store: Store, workspaceId: number, warnBefore: string | null, limits: PolicyLimits): Promise<ExpiryPolicy> {
  const policy: ExpiryPolicy = { warnBefore: warnBefore === null ? null : duration(warnBefore, 'warn_before', limits) };
  await store.policies.putExpiry(workspaceId, policy);
  return policy;
}
