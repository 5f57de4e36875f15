import type { StatusFilter, WorkspaceRole } from './user.ts';

/*
 * One query path for every listing (docs/architecture.md, "Growing the house"): the native filters
 * (`q`, `role`, `app`), the SCIM filter grammar and the console's search all become a
 * UserQuery, which storage compiles into one indexed SQL statement with an exact total.
 */

/** A column of the user a condition can test. */
export type UserField =
  | 'id'
  | 'email'
  | 'firstName'
  | 'lastName'
  | 'role'
  | 'status'
  | 'externalId'
  | 'createdAt'
  | 'updatedAt'
  /** When the membership ends (null: never). */
  | 'expiresAt'
  /** When the user was last seen: its reported activity, else its creation. */
  | 'lastSeenAt'
  /** The user's product roles, each as the text `"product:role"`: true when any one matches. */
  | 'app'
  /** The product names of the user's apps: true when any one matches. */
  | 'product';

/**
 * A path into the user's SCIM attributes ({@link User.scimAttributes}), e.g. `['displayName']`
 * or `['addresses', 'country']`; arrays on the way are searched element by element (any
 * element matching makes the condition true). Names are letters, digits, `_`, `-`, `$`.
 */
export interface ScimAttributePath {
  readonly scimAttribute: readonly string[];
}

/** Comparison operators of RFC 7644 §3.4.2.2 (`pr` takes no value). */
export type ComparisonOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le' | 'pr';

/** A value a condition compares with: text, a number, a boolean, an instant, or null. */
export type ConditionValue = string | number | boolean | Date | null;

/**
 * A boolean expression over a user's attributes. Text comparisons are case-insensitive unless
 * `caseExact` (RFC 7643 §2.2 `caseExact`); `createdAt`/`updatedAt` compare instants (the value
 * is a Date); `status` compares `active`/`deactivated`.
 */
export type UserCondition =
  | { readonly op: 'and' | 'or'; readonly conditions: readonly UserCondition[] }
  | { readonly op: 'not'; readonly condition: UserCondition }
  | { readonly op: 'true' | 'false' }
  /** The user's `id` is one of `values` (e.g. the members named in a SCIM group change). */
  | { readonly op: 'in'; readonly field: 'id'; readonly values: readonly string[] }
  /**
   * Some element of the array at the SCIM attribute path `path` satisfies `condition`, whose
   * `scimAttribute` fields are paths inside that element (RFC 7644 §3.4.2.2 `valuePath`, e.g.
   * `addresses[type eq "work" and country eq "DE"]`: both tests hold for one and the same address).
   */
  | { readonly op: 'any'; readonly path: readonly string[]; readonly condition: UserCondition }
  | {
      readonly op: ComparisonOperator;
      readonly field: UserField | ScimAttributePath;
      readonly value?: ConditionValue;
      readonly caseExact?: boolean;
    };

/** Orders of a listing (docs/contract.md Part B, Finding users); `-` means descending. */
export const USER_SORTS = ['created_at', '-created_at', 'email', '-email', 'expires_at', '-expires_at'] as const;
/** One of {@link USER_SORTS}. */
export type UserSort = (typeof USER_SORTS)[number];

/** Which users a listing returns, and in which order. */
export interface UserQuery {
  readonly status: StatusFilter;
  /** Further conditions, combined with `status` by AND. */
  readonly where?: UserCondition;
  /** Default `created_at` (oldest first); ties are broken by creation order. */
  readonly sort?: UserSort;
  /** Leave out users deleted through SCIM (they answer 404 there until reactivated). */
  readonly excludeScimDeleted?: boolean;
}

/** A window of rows: skip `offset`, return at most `limit` (SCIM's `startIndex - 1`, `count`). */
export interface RowWindow {
  readonly offset: number;
  readonly limit: number;
}

/** The native listing filters of `GET /users` (docs/contract.md Part B, Finding users). */
export interface UserSearch {
  /** Case-insensitive prefix of the email, the first or the last name. */
  readonly q?: string;
  readonly role?: WorkspaceRole;
  /** A product (`crm`) or one role of it (`crm:admin`). */
  readonly app?: string;
  /** Only users whose membership ends before this instant. */
  readonly expiresBefore?: Date;
  /** Only users not seen since this instant (no activity reported after it, nor created after it). */
  readonly inactiveSince?: Date;
}

/**
 * The condition of the native filters, or undefined when there is none. `q` matches a prefix
 * of the email, the first or the last name (case-insensitive); `app` without a role matches
 * any role of that product. Source: docs/contract.md Part B, Finding users.
 */
export function searchCondition(search: UserSearch): UserCondition | undefined {
  const conditions: UserCondition[] = [];
  if (search.q) {
    const q = search.q;
    conditions.push({
      op: 'or',
      conditions: (['email', 'firstName', 'lastName'] as const).map((field) => ({ op: 'sw' as const, field, value: q })),
    });
  }
  if (search.role) conditions.push({ op: 'eq', field: 'role', value: search.role, caseExact: true });
  if (search.app) {
    const colon = search.app.indexOf(':');
    conditions.push(
      colon < 0
        ? { op: 'eq', field: 'product', value: search.app, caseExact: true }
        : { op: 'eq', field: 'app', value: search.app, caseExact: true },
    );
  }
  if (search.expiresBefore) conditions.push({ op: 'lt', field: 'expiresAt', value: search.expiresBefore });
  if (search.inactiveSince) conditions.push({ op: 'lt', field: 'lastSeenAt', value: search.inactiveSince });
  if (conditions.length === 0) return undefined;
  return conditions.length === 1 ? conditions[0] : { op: 'and', conditions };
}
