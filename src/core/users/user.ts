/** Workspace role of a user (docs/contract.md Part A). */
export type WorkspaceRole = 'owner' | 'non_owner';

/** Lifecycle state of a user (docs/contract.md Part A). */
export type UserStatus = 'active' | 'deactivated';

/** One role a user holds in one product; `name` is the product name (docs/contract.md Part A, `apps`). */
export interface AppRole {
  readonly name: string;
  readonly role: string;
  /** When this grant ends; absent or null: never (docs/contract.md Part B, "Access that ends on time"). */
  readonly expiresAt?: Date | null;
}

/**
 * Attributes of the SCIM core User schema (RFC 7643 §4.1) and its enterprise extension that
 * wum does not model as columns (`displayName`, `addresses`, `phoneNumbers`, further
 * `emails`, `name.formatted`, …), kept as an identity provider sent them so that it reads back
 * what it wrote. A JSON object; the native API neither shows nor changes it.
 */
export type ScimAttributes = Readonly<Record<string, unknown>>;

/** The attributes a store writes for a user (created or changed). */
export interface UserWrite {
  readonly email: string;
  readonly role: WorkspaceRole;
  readonly firstName: string;
  readonly lastName: string;
  readonly apps: readonly AppRole[];
  readonly status: UserStatus;
  /** SCIM `externalId`: the identity provider's id for the user, stored as sent (not unique). */
  readonly externalId: string | null;
  /** SCIM attributes wum keeps without modelling them; null when none were sent. */
  readonly scimAttributes: ScimAttributes | null;
  /**
   * True after a SCIM `DELETE`: the user is deactivated and answers 404 on SCIM until it is
   * reactivated (docs/contract.md Part B, SCIM 2.0 provisioning). False again on any reactivation.
   */
  readonly scimDeleted: boolean;
  /** When the membership ends (the user is then deactivated); null: never. */
  readonly expiresAt: Date | null;
}

/**
 * A user as the domain sees it: what a store writes, and what it gives it. Timestamps are
 * instants; `apps` keep the order given.
 */
export interface User extends UserWrite {
  /** A UUID given at creation that never changes (docs/contract.md Part B, Changing a user in place). */
  readonly id: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** 1 at creation, one more on every change: the user's strong ETag (RFC 9110 §8.8.3). */
  readonly version: number;
  /** The latest activity reported for the user (`POST /users/activity`); null until one is. */
  readonly lastActiveAt: Date | null;
}

/** A stored user with its row id: a per-table sequence that orders users by creation. */
export interface StoredUser extends User {
  readonly rowId: number;
}

/** Which users a listing shows (docs/contract.md Part B, Listing: default `active`). */
export type StatusFilter = UserStatus | 'all';

/** Names a user: by email (matched case-insensitively) or by its `id`. */
export type UserRef = { readonly email: string } | { readonly id: string };

/** The kinds of user change, as audit actions and event types (docs/contract.md Part B, Events and webhooks). */
export type UserChangeType = 'user.created' | 'user.updated' | 'user.deactivated' | 'user.reactivated';

/**
 * Events a policy records about a user without changing it: a last owner's end deferred, an end
 * coming (docs/contract.md Part B, "Access that ends on time").
 */
export type UserNoticeType = 'user.expiry_deferred' | 'user.access_expiring';

/** Why a policy changed a user or records a notice: the event's `data.reason`. */
export type PolicyReason = 'expired' | 'inactive' | 'grant_expired';

/** Input of an add (`addUser` in users-service.ts, and each row of a bulk import): `firstName`/`lastName` (and the SCIM fields) undefined means omitted. */
export interface AddUserInput {
  readonly email: string;
  readonly role: WorkspaceRole;
  readonly apps: readonly AppRole[];
  readonly firstName?: string | undefined;
  readonly lastName?: string | undefined;
  /** Default `active`; SCIM may create a user deactivated (`active: false`). */
  readonly status?: UserStatus | undefined;
  readonly externalId?: string | null | undefined;
  readonly scimAttributes?: ScimAttributes | null | undefined;
  /** When the membership ends; must be in the future. Omitted: never (a reactivation clears a past one). */
  readonly expiresAt?: Date | null | undefined;
}
