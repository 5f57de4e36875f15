import type { AuditEntry } from '../audit/audit-repository.ts';
import type { PageRequest, Slice } from '../pagination.ts';
import type { PolicyReason, StatusFilter, StoredUser, UserChangeType, UserNoticeType, UserRef, UserWrite } from './user.ts';
import type { RowWindow, UserCondition, UserQuery } from './user-query.ts';

/*
 * Users as the domain stores them: what a change writes beside the user (its audit entry and
 * event), a policy's notice, activity reports, and the port (storage/users.queries.ts).
 */

/**
 * What a user change writes besides the user, in the same statement or transaction: its
 * audit entry and its outbox event, whose `data` is the user after the change (built by the
 * store from the row it wrote) and `previous`, the changed fields before, in the API's names
 * (docs/contract.md Part B, Events and webhooks: "no change without its event").
 */
export interface UserChangeRecord {
  readonly audit: AuditEntry;
  readonly eventType: UserChangeType;
  readonly previous: Readonly<Record<string, unknown>> | null;
  /** Why a policy made the change: the event's `data.reason` (docs/contract.md Part B, "Access that ends on time"). */
  readonly reason?: PolicyReason;
}

/**
 * What a policy records about a user without changing it (a deferral, a warning): once per user,
 * `mark` and due instant `dueAt`, with its audit entry and its event (`data`: the user,
 * `reason`, `ends_at`).
 */
export interface UserNotice {
  readonly type: UserNoticeType;
  readonly mark: 'deferred_expiry' | 'deferred_inactivity' | 'warned_expiry' | 'warned_inactivity';
  readonly reason: PolicyReason;
  readonly dueAt: Date;
  readonly audit: AuditEntry;
}

/** The result of recording activity reports. */
export interface ActivityResult {
  /** Users whose `last_active_at` moved forward. */
  readonly updated: number;
  /** Reports that named a user of the workspace but were not newer than what it had. */
  readonly unchanged: number;
  /** Emails of the reports no user of the workspace has, as sent. */
  readonly unknown: string[];
}

/** Users of a workspace. Every method takes the workspace id first: no query can omit it. */
export interface UserRepository {
  /**
   * Finds a user by email (case-insensitively) or id; `lock` takes a row lock until commit,
   * and the user returned (apps included) is then as it is once the lock is held — never a
   * version from before a concurrent change the lock waited for.
   */
  find(workspaceId: number, ref: UserRef, options?: { lock?: boolean }): Promise<StoredUser | undefined>;
  /**
   * Inserts a user with id `id`, its apps, its audit entry and its event, atomically, unless
   * the workspace already has a user with that email (in any letter case, any status) or the
   * catalogue lacks one of the user's product roles: then nothing is written and the result
   * is undefined. The products named are share-locked until commit. A concurrent insert of
   * the same email is waited for, so exactly one of them inserts.
   */
  insertIfAbsent(workspaceId: number, id: string, user: UserWrite, record: UserChangeRecord): Promise<StoredUser | undefined>;
  /**
   * Inserts each new user whose email is free, with its apps, counts, audit entry and event, in
   * set-based statements (a bulk import's batch); the apps were checked by the caller under the
   * products' share locks. Users whose email a concurrent add took are left out.
   * @returns the ids of the users inserted.
   */
  insertMany(workspaceId: number, users: ReadonlyArray<{ readonly id: string; readonly user: UserWrite; readonly record: UserChangeRecord }>): Promise<Set<string>>;
  /** The users holding any of `emails` (case-insensitively), row-locked until commit. */
  lockByEmails(workspaceId: number, emails: readonly string[]): Promise<StoredUser[]>;
  /**
   * Writes every attribute of `current` (locked by the caller) from `user`, its apps when
   * they differ, one more version, the audit entry and the event, in one statement.
   */
  write(workspaceId: number, current: StoredUser, user: UserWrite, record: UserChangeRecord): Promise<StoredUser>;
  /**
   * As {@link write}, for a `current` read without a lock: writes only while the user is still
   * at `current.version` (a compare-and-set in the same statement, which waits for a
   * concurrent writer of the row and then sees its version), and never its apps (`user.apps`
   * must equal `current.apps`). One statement, its own transaction outside one.
   * @returns the user as written, or undefined when its version moved on (nothing written).
   */
  writeIfUnchanged(workspaceId: number, current: StoredUser, user: UserWrite, record: UserChangeRecord): Promise<StoredUser | undefined>;
  /** Counts active owners of the workspace. */
  countActiveOwners(workspaceId: number): Promise<number>;
  /** One page of users, oldest first, with the total matching `status` (the unfiltered listing). */
  findPage(workspaceId: number, status: StatusFilter, page: PageRequest): Promise<Slice<StoredUser>>;
  /** A window of the users matching `query`, in its order, with the exact total matching it. */
  findMatching(workspaceId: number, query: UserQuery, window: RowWindow): Promise<Slice<StoredUser>>;
  /** Locks every user matching `condition` until commit, in creation order (so that bulk changes cannot deadlock), and returns them. */
  lockMatching(workspaceId: number, condition: UserCondition): Promise<StoredUser[]>;
  /**
   * Records `notice` about user `userId` (its public id) unless the same mark and due instant
   * is recorded already: the mark, the audit entry and the event in one statement.
   * @returns whether it was recorded now.
   */
  recordNotice(workspaceId: number, userId: string, notice: UserNotice): Promise<boolean>;
  /**
   * Moves each named user's `last_active_at` forward to the instant reported (never back; the
   * latest of several reports of one email), in one statement; neither a version nor an event.
   */
  recordActivity(workspaceId: number, reports: ReadonlyArray<{ readonly email: string; readonly at: Date }>): Promise<ActivityResult>;
}
