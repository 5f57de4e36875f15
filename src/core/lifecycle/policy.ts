/*
 * The values of a workspace's access policies (docs/contract.md Part B, "Access that ends on
 * time"); the rules that write them are policies.ts.
 */

/** A duration as written and its length. */
export interface PolicyDuration {
  readonly text: string;
  readonly seconds: number;
}

/** Who an inactivity policy deactivates: everyone but owners, or everyone. */
export type InactivityScope = 'non_owners' | 'all';

/** The inactivity policy: deactivate active users not seen for `deactivateAfter`. */
export interface InactivityPolicy {
  readonly deactivateAfter: PolicyDuration;
  readonly appliesTo: InactivityScope;
  /** When the `user.access_expiring` warning goes out, before the deactivation; null: none. */
  readonly warnBefore: PolicyDuration | null;
}

/** The expiry policy: when the warning before a membership's `expires_at` goes out. */
export interface ExpiryPolicy {
  readonly warnBefore: PolicyDuration | null;
}

/** A workspace's stored policies. */
export interface WorkspacePolicies {
  readonly inactivity: InactivityPolicy | null;
  readonly expiry: ExpiryPolicy;
}

/** The shortest duration a policy accepts (`POLICY_MIN_DURATION`). */
export interface PolicyLimits {
  readonly minDuration: PolicyDuration;
}

