import type { ExpiryPolicy, InactivityPolicy, WorkspacePolicies } from './policy.ts';

/*
 * Workspaces' access policies as the domain stores them: the port (storage/policies.queries.ts); the
 * policies are in policy.ts.
 */

/** Workspaces' access policies (docs/contract.md Part B, "Access that ends on time"). */
export interface PolicyRepository {
  /** The workspace's policies; undefined when it never set one. */
  find(workspaceId: number): Promise<WorkspacePolicies | undefined>;
  /** Replaces (null: removes) the inactivity policy; false when removing one that did not exist. */
  putInactivity(workspaceId: number, policy: InactivityPolicy | null): Promise<boolean>;
  /** Replaces the expiry policy. */
  putExpiry(workspaceId: number, policy: ExpiryPolicy): Promise<void>;
}
