/**
 * A SCIM group of a workspace: one product role of the catalogue, linked so that an identity
 * provider can assign it (docs/contract.md Part B, SCIM 2.0 provisioning: groups are product roles).
 * Its members are the users holding the role; the group itself stores no member list.
 */
export interface Group {
  /** A UUID given when the role was linked. */
  readonly id: string;
  readonly product: string;
  readonly role: string;
  /** The identity provider's id of the group, stored as sent. */
  readonly externalId: string | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** The name of a group: `"product:role"`, its SCIM `displayName`. */
export function groupName(group: Pick<Group, 'product' | 'role'>): string {
  return `${group.product}:${group.role}`;
}

/**
 * A change of a group's members, applied in order: start from the current holders (`keep`)
 * or from nobody (`none`), then the users in `add` hold the role and those in `remove` do
 * not. Ids are user ids; ids of no user of the workspace are ignored.
 */
export interface MembershipChange {
  readonly base: 'keep' | 'none';
  readonly add: readonly string[];
  readonly remove: readonly string[];
}
