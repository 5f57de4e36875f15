/** Workspace role of a user (SPEC.md Part A). */
export type WorkspaceRole = 'owner' | 'non_owner';

/** Lifecycle state of a user (SPEC.md Part A). */
export type UserStatus = 'active' | 'deactivated';

/** One role a user holds in one product; `name` is the product name (SPEC.md Part A, `apps`). */
export interface AppRole {
  readonly name: string;
  readonly role: string;
}

/** A user as the domain sees it. Timestamps are instants; `apps` keep the order given. */
export interface User {
  readonly email: string;
  readonly role: WorkspaceRole;
  readonly firstName: string;
  readonly lastName: string;
  readonly apps: readonly AppRole[];
  readonly status: UserStatus;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** A stored user with its database id (creation order within its workspace). */
export interface StoredUser extends User {
  readonly id: number;
}

/** The attributes a store writes for a user (created or replaced). */
export interface UserWrite {
  readonly email: string;
  readonly role: WorkspaceRole;
  readonly firstName: string;
  readonly lastName: string;
  readonly apps: readonly AppRole[];
  readonly status: UserStatus;
}

/** Which users a listing shows (SPEC.md Part B, Listing: default `active`). */
export type StatusFilter = UserStatus | 'all';
