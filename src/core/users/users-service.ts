import type { Actor } from '../actor.ts';
import { requireScopeOf } from '../api-keys/scopes.ts';
import { AppError } from '../errors.ts';
import { paginate, pageOffset, type Page, type PageRequest, type Slice } from '../pagination.ts';
import type { Repositories, Store } from '../ports.ts';
import type { AuditEntry, AuditEvent } from '../audit/audit-repository.ts';
import type { UserChangeRecord } from './user-repository.ts';
import { appsInCatalogue, assertAppsExist, dedupeApps } from '../products/apps.ts';
import type { RowWindow, UserCondition, UserQuery } from './user-query.ts';
import { auditSnapshot, previousWireFields } from './wire-user.ts';
import { foldEmail } from './email.ts';
import type {
  AddUserInput,
  AppRole,
  PolicyReason,
  ScimAttributes,
  StoredUser,
  User,
  UserChangeType,
  UserRef,
  UserStatus,
  UserWrite,
  WorkspaceRole,
} from './user.ts';

/** The default for an omitted first or last name (docs/contract.md Part A). */
export const NAME_PLACEHOLDER = '-';

export type { AddUserInput } from './user.ts';

/** Result of {@link addUser}: the user, and whether an existing deactivated user was reactivated. */
export interface AddUserResult {
  readonly user: User;
  readonly reactivated: boolean;
}

/**
 * A change of a user in place: omitted fields stay as they are; `apps` replaces the whole
 * set; `firstName`/`lastName` null resets to `-`; `externalId`/`scimAttributes` null clears
 * them. Source: docs/contract.md Part B, Changing a user in place.
 */
export interface UserChanges {
  readonly email?: string;
  readonly role?: WorkspaceRole;
  readonly firstName?: string | null;
  readonly lastName?: string | null;
  readonly apps?: readonly AppRole[];
  readonly status?: UserStatus;
  readonly externalId?: string | null;
  readonly scimAttributes?: ScimAttributes | null;
  /** Set by a SCIM DELETE; any reactivation clears it. */
  readonly scimDeleted?: boolean;
  /** When the membership ends (in the future); null: never. */
  readonly expiresAt?: Date | null;
}

/**
 * The versions an `If-Match` accepts: `*` (any existing user) or a list of versions.
 * Source: RFC 9110 §13.1.1; docs/contract.md Part B, Changing a user in place.
 */
export type Precondition = '*' | readonly number[];

/** Options of the changes that honour a precondition. */
export interface ChangeOptions {
  /** `If-Match`: refuse the change unless the user's version is one of these. */
  readonly ifMatch?: Precondition;
  /** The audit action to record (default `user.updated`); the event type follows the status. */
  readonly action?: UserChangeType;
  /** Why a policy made the change: the event's `data.reason` (docs/contract.md Part B, "Access that ends on time"). */
  readonly reason?: PolicyReason;
}

/** The result of a change: the user as it is now, and whether anything changed. */
export interface ChangeResult {
  readonly user: User;
  readonly changed: boolean;
}

/** The user without its row id. */
function snapshot(user: StoredUser): User {
  const { rowId: _rowId, ...rest } = user;
  return rest;
}

/** The attributes a store writes for `user`. */
function writeOf(user: User): UserWrite {
  return {
    email: user.email,
    role: user.role,
    firstName: user.firstName,
    lastName: user.lastName,
    apps: user.apps,
    status: user.status,
    externalId: user.externalId,
    scimAttributes: user.scimAttributes,
    scimDeleted: user.scimDeleted,
    expiresAt: user.expiresAt,
  };
}

/**
 * Refuses an expiry (of the membership or of a grant) that is not in the future: a write that
 * would end access at once is a mistake, not an intent (docs/contract.md Part B, "Access that
 * ends on time").
 * @throws AppError `expires_at_not_in_future` (422), naming each field.
 */
export function assertExpiriesInFuture(expiresAt: Date | null | undefined, apps: readonly AppRole[] | undefined, now: Date = new Date()): void {
  const errors = [
    ...(expiresAt && expiresAt <= now ? [{ field: 'user.expires_at', message: 'must be later than now' }] : []),
    ...(apps ?? []).flatMap((app, i) =>
      app.expiresAt && app.expiresAt <= now ? [{ field: `user.apps[${i}].expires_at`, message: 'must be later than now' }] : [],
    ),
  ];
  if (errors.length > 0) throw new AppError('expires_at_not_in_future', 'An expiry must be in the future.', errors);
}

/**
 * What the change of user `id` from `before` (undefined: created) to `after` records: its audit
 * entry (snapshots before and after) and its event's type and changed fields. Shared by every
 * writer of users, the bulk import among them (docs/contract.md Part B, Events and webhooks).
 */
export function changeRecord(
  workspaceId: number,
  actor: Actor,
  action: UserChangeType,
  id: string,
  before: UserWrite | undefined,
  after: UserWrite,
  reason?: PolicyReason,
): UserChangeRecord {
  const audit: AuditEntry = {
    workspaceId,
    actor,
    action,
    targetType: 'user',
    targetId: after.email,
    userId: id,
    before: before ? auditSnapshot(id, before) : null,
    after: auditSnapshot(id, after),
  };
  const eventType: UserChangeType = !before
    ? 'user.created'
    : before.status === after.status
      ? 'user.updated'
      : after.status === 'active'
        ? 'user.reactivated'
        : 'user.deactivated';
  return { audit, eventType, previous: before ? previousWireFields(before, after) : null, ...(reason ? { reason } : {}) };
}

/** `current` with `changes` applied (names reset to `-` on null, apps de-duplicated). */
function applyChanges(current: User, changes: UserChanges): UserWrite {
  const status = changes.status ?? current.status;
  const reactivated = current.status === 'deactivated' && status === 'active';
  const name = (value: string | null | undefined, kept: string) =>
    value === undefined ? kept : value === null ? NAME_PLACEHOLDER : value;
  return {
    email: changes.email ?? current.email,
    role: changes.role ?? current.role,
    firstName: name(changes.firstName, current.firstName),
    lastName: name(changes.lastName, current.lastName),
    apps: changes.apps ? dedupeApps(changes.apps) : current.apps,
    status,
    externalId: changes.externalId === undefined ? current.externalId : changes.externalId,
    scimAttributes: changes.scimAttributes === undefined ? current.scimAttributes : changes.scimAttributes,
    scimDeleted: reactivated ? false : (changes.scimDeleted ?? current.scimDeleted),
    // A reactivation clears an expiry already past, which would end the membership again at once.
    expiresAt:
      changes.expiresAt !== undefined
        ? changes.expiresAt
        : reactivated && current.expiresAt && current.expiresAt <= new Date()
          ? null
          : current.expiresAt,
  };
}

/** True when `next` writes exactly what `current` holds. */
function unchanged(current: User, next: UserWrite): boolean {
  return JSON.stringify(writeOf(current)) === JSON.stringify(next);
}

/**
 * Which rules of {@link writeChange} the change from `current` to `next` must check against
 * other rows: the catalogue (its apps change, or it reactivates the user), the other users'
 * emails (a rename), the workspace's other active owners (it demotes or deactivates an
 * active owner).
 */
function checksOf(current: User, next: UserWrite): { readonly catalogue: boolean; readonly email: boolean; readonly owner: boolean } {
  return {
    catalogue: JSON.stringify(current.apps) !== JSON.stringify(next.apps) || (current.status !== 'active' && next.status === 'active'),
    email: foldEmail(next.email) !== foldEmail(current.email),
    owner: current.status === 'active' && current.role === 'owner' && (next.status !== 'active' || next.role !== 'owner'),
  };
}

/**
 * Refuses a change that makes someone an owner unless its actor holds `owners:write`: creating
 * an owner (of any status), promoting a user to owner, reactivating an owner, or renaming one
 * (a new email hands the owner's sign-in to another mailbox). An owner's session holds every
 * scope, so without this a key could reach, through a person it makes an owner, what its own
 * scopes refuse. Source: docs/security.md, "API keys and scopes".
 * @throws AppError `insufficient_scope` (403) naming `owners:write`.
 */
export function requireOwnerGrant(actor: Actor, current: User | undefined, next: UserWrite): void {
  if (next.role !== 'owner') return;
  const grants =
    !current ||
    current.role !== 'owner' ||
    (current.status !== 'active' && next.status === 'active') ||
    current.email !== next.email;
  if (grants) requireScopeOf(actor.scopes, 'owners:write');
}

/**
 * Writes `next` over `current` (locked by the caller's transaction) with its audit entry and
 * event, after the rules every change obeys: the apps exist in the catalogue, the email is no
 * other user's, and the last active owner stays an active owner (the workspace row is locked
 * before the owner count, so concurrent changes cannot leave no active owner).
 * @throws AppError `insufficient_scope` (403), `unknown_product` / `unknown_product_role` (422),
 *   `user_already_exists` (409), `last_owner` (409), each before anything is written.
 */
export async function writeChange(
  tx: Repositories,
  workspaceId: number,
  current: StoredUser,
  next: UserWrite,
  actor: Actor,
  action: UserChangeType,
  reason?: PolicyReason,
): Promise<StoredUser> {
  requireOwnerGrant(actor, current, next);
  const checks = checksOf(current, next);
  if (checks.catalogue) {
    // A role the user already holds stays valid even if the catalogue has dropped it since
    // (only a deactivated user can hold one), unless the change reactivates the user: an
    // active user holds only roles the catalogue has.
    const reactivates = current.status !== 'active' && next.status === 'active';
    const held = new Set(current.apps.map((app) => JSON.stringify([app.name, app.role])));
    await assertAppsExist(tx.products, next.apps, 'user.apps', (app) => !reactivates && held.has(JSON.stringify([app.name, app.role])));
  }
  if (checks.email) {
    const holder = await tx.users.find(workspaceId, { email: next.email });
    if (holder && holder.rowId !== current.rowId) {
      throw new AppError('user_already_exists', `A user with email ${next.email} already exists in this workspace.`, [
        { field: 'user.email', message: 'belongs to another user of this workspace' },
      ]);
    }
  }
  if (checks.owner) {
    await tx.workspaces.lock(workspaceId);
    if ((await tx.users.countActiveOwners(workspaceId)) <= 1) {
      throw new AppError('last_owner', `${current.email} is the last active owner of this workspace.`);
    }
  }
  return tx.users.write(workspaceId, current, next, changeRecord(workspaceId, actor, action, current.id, current, next, reason));
}

/** The detail of `user_not_found` for a reference. */
function notFound(ref: UserRef): AppError {
  return new AppError(
    'user_not_found',
    'email' in ref ? `No user with email ${ref.email} in this workspace.` : `No user with id ${ref.id} in this workspace.`,
  );
}

/**
 * Checks an `If-Match` precondition against the user's version.
 * @throws AppError `precondition_failed` (412).
 */
function checkPrecondition(user: User, ifMatch: Precondition | undefined): void {
  if (ifMatch === undefined || ifMatch === '*' || ifMatch.includes(user.version)) return;
  throw new AppError('precondition_failed', 'The user has changed since the ETag sent in If-Match; fetch it again and retry.');
}

/**
 * The user an add writes when its email is new: names default to `-`, apps de-duplicated,
 * active unless `input.status` says otherwise. Source: docs/contract.md Part A (`POST /users`).
 * @throws AppError `expires_at_not_in_future` (422); `insufficient_scope` (403) for an owner
 *   without `owners:write`.
 */
export function newUserOf(input: AddUserInput, actor: Actor): UserWrite {
  assertExpiriesInFuture(input.expiresAt, input.apps);
  const user: UserWrite = {
    email: input.email,
    role: input.role,
    firstName: input.firstName ?? NAME_PLACEHOLDER,
    lastName: input.lastName ?? NAME_PLACEHOLDER,
    apps: dedupeApps(input.apps),
    status: input.status ?? 'active',
    externalId: input.externalId ?? null,
    scimAttributes: input.scimAttributes ?? null,
    scimDeleted: false,
    expiresAt: input.expiresAt ?? null,
  };
  requireOwnerGrant(actor, undefined, user);
  return user;
}

/**
 * What an add of `input` makes of the deactivated user `existing` with its email: `role` and
 * `apps` replaced, names and SCIM fields replaced only when given, out of SCIM's deletion; and
 * the audit action (`user.reactivated`, or `user.updated` for an add that keeps it deactivated).
 * Source: docs/contract.md Part B, Users.
 */
export function reactivationOf(existing: User, input: AddUserInput, apps: readonly AppRole[]): { next: UserWrite; action: UserChangeType } {
  const next = applyChanges(existing, {
    role: input.role,
    apps,
    status: input.status ?? 'active',
    ...(input.firstName === undefined ? {} : { firstName: input.firstName }),
    ...(input.lastName === undefined ? {} : { lastName: input.lastName }),
    ...(input.externalId === undefined ? {} : { externalId: input.externalId }),
    ...(input.scimAttributes === undefined ? {} : { scimAttributes: input.scimAttributes }),
    ...(input.expiresAt === undefined ? {} : { expiresAt: input.expiresAt }),
  });
  return { next: { ...next, scimDeleted: false }, action: next.status === 'active' ? 'user.reactivated' : 'user.updated' };
}

/**
 * Adds a user to a workspace, or reactivates a deactivated user with that email.
 * On reactivation `role` and `apps` are replaced and names (and SCIM fields) are replaced only
 * when given; the stored email keeps its spelling. Source: docs/contract.md Part A (`POST /users`) and
 * Part B, Users; RFC 7644 §3.3 for the SCIM fields.
 *
 * @throws AppError `unknown_product` / `unknown_product_role` (422) for apps outside the
 *   catalogue; `user_already_exists` (409) when an active user has the email (also when a
 *   concurrent add wins the race).
 */
export async function addUser(
  store: Store,
  workspaceId: number,
  input: AddUserInput,
  actor: Actor,
): Promise<AddUserResult> {
  const user = newUserOf(input, actor);
  const { apps } = user;
  const id = crypto.randomUUID();
  const created = changeRecord(workspaceId, actor, 'user.created', id, undefined, user);
  // Most adds are new users with roles the catalogue has: checked against the (cached)
  // catalogue, one statement inserts the user, checking its roles again under a lock. Any other
  // case (the email taken, a role unknown or just removed) takes the transaction below.
  if (await appsInCatalogue(store.products, apps)) {
    const inserted = await store.users.insertIfAbsent(workspaceId, id, user, created);
    if (inserted) return { user: snapshot(inserted), reactivated: false };
  }
  return store.transaction(async (tx) => {
    await assertAppsExist(tx.products, apps, 'user.apps');
    const inserted = await tx.users.insertIfAbsent(workspaceId, id, user, created);
    if (inserted) return { user: snapshot(inserted), reactivated: false };
    const existing = await tx.users.find(workspaceId, { email: input.email }, { lock: true });
    if (!existing || existing.status === 'active') {
      throw new AppError('user_already_exists', `An active user with email ${input.email} already exists.`);
    }
    const { next, action } = reactivationOf(existing, input, apps);
    const written = await writeChange(tx, workspaceId, existing, next, actor, action);
    return { user: snapshot(written), reactivated: true };
  });
}

/**
 * The common change of {@link updateUser} in two statements and no transaction of its own:
 * the user read without a lock, then written only while still at the version read (so no
 * concurrent change is lost: the write waits for a concurrent writer's row lock and then
 * finds its newer version). Only for a change that checks no other row (see {@link checksOf});
 * what it reads is one snapshot, so the answers it gives (not found, precondition failed,
 * nothing to change) are those of the moment of that read.
 * @returns the result, or undefined when the change needs the locked transaction (a rule to
 *   check, or the user changed between the read and the write).
 */
async function changeWithoutLock(
  store: Store,
  workspaceId: number,
  ref: UserRef,
  change: UserChanges | ((current: User) => UserChanges | Promise<UserChanges>),
  actor: Actor,
  options: ChangeOptions,
): Promise<ChangeResult | undefined> {
  const current = await store.users.find(workspaceId, ref);
  if (!current) throw notFound(ref);
  checkPrecondition(current, options.ifMatch);
  const next = applyChanges(current, typeof change === 'function' ? await change(snapshot(current)) : change);
  if (unchanged(current, next)) return { user: snapshot(current), changed: false };
  requireOwnerGrant(actor, current, next);
  const checks = checksOf(current, next);
  if (checks.catalogue || checks.email || checks.owner) return undefined;
  const record = changeRecord(workspaceId, actor, options.action ?? 'user.updated', current.id, current, next, options.reason);
  const written = await store.users.writeIfUnchanged(workspaceId, current, next, record);
  return written ? { user: snapshot(written), changed: true } : undefined;
}

/**
 * Changes a user in place, in one transaction that holds the user's row lock: `change` is the
 * fields to change, or a function computing them (possibly asynchronously, without I/O of its
 * own) from the user as it is under the lock (so a read-modify-write such as a SCIM PATCH
 * cannot lose a concurrent change). A change that
 * changes nothing writes nothing: no new version, no audit entry, no event.
 * Source: docs/contract.md Part B, Changing a user in place.
 *
 * @returns the user as it is after the call, and whether it changed.
 * @throws AppError `user_not_found` (404); `precondition_failed` (412) when `ifMatch` does not
 *   match; `unknown_product` / `unknown_product_role` (422); `expires_at_not_in_future` (422)
 *   for an expiry (given as fields) not later than now; `user_already_exists` (409) for
 *   an email another user holds; `last_owner` (409) for demoting or deactivating the last
 *   active owner; whatever `change` throws.
 */
export async function updateUser(
  store: Store,
  workspaceId: number,
  ref: UserRef,
  change: UserChanges | ((current: User) => UserChanges | Promise<UserChanges>),
  actor: Actor,
  options: ChangeOptions = {},
): Promise<ChangeResult> {
  if (typeof change !== 'function') assertExpiriesInFuture(change.expiresAt, change.apps);
  const unlocked = await changeWithoutLock(store, workspaceId, ref, change, actor, options);
  if (unlocked) return unlocked;
  return store.transaction(async (tx) => {
    const current = await tx.users.find(workspaceId, ref, { lock: true });
    if (!current) throw notFound(ref);
    checkPrecondition(current, options.ifMatch);
    const next = applyChanges(current, typeof change === 'function' ? await change(snapshot(current)) : change);
    if (unchanged(current, next)) return { user: snapshot(current), changed: false };
    const written = await writeChange(tx, workspaceId, current, next, actor, options.action ?? 'user.updated', options.reason);
    return { user: snapshot(written), changed: true };
  });
}

/**
 * Deactivates a user. Deactivating an already deactivated user changes nothing and succeeds,
 * so a retried offboarding call does not fail. With `scimDelete` the user also leaves SCIM
 * (it answers 404 there until reactivated). Source: docs/contract.md Part B, Users
 * (`DELETE /users/{email}`) and SCIM 2.0 provisioning (`DELETE /Users/{id}`).
 *
 * @returns whether the call changed anything.
 * @throws AppError `user_not_found` (404); `precondition_failed` (412); `last_owner` (409)
 *   for the last active owner.
 */
export async function deactivateUser(
  store: Store,
  workspaceId: number,
  ref: UserRef,
  actor: Actor,
  options: {
    readonly ifMatch?: Precondition;
    readonly scimDelete?: boolean;
    /** Why a policy deactivates the user: the event's `data.reason`. */
    readonly reason?: PolicyReason;
    /**
     * Deactivate only while this holds of the user as it is when changed (under its lock, or at
     * the version written): a policy's deactivation of a user still due, never of one changed since.
     */
    readonly onlyIf?: (current: User) => boolean;
  } = {},
): Promise<{ changed: boolean }> {
  const changes: UserChanges = { status: 'deactivated', ...(options.scimDelete ? { scimDeleted: true } : {}) };
  const { onlyIf } = options;
  const { changed } = await updateUser(store, workspaceId, ref, onlyIf ? (current) => (onlyIf(current) ? changes : {}) : changes, actor, {
    action: 'user.deactivated',
    ...(options.ifMatch === undefined ? {} : { ifMatch: options.ifMatch }),
    ...(options.reason ? { reason: options.reason } : {}),
  });
  return { changed };
}

/**
 * Applies `change` to every user matching `condition`, in one transaction: the users are
 * locked in creation order first (so that two bulk changes cannot deadlock), then each is
 * changed with the same rules, audit entry and event as {@link updateUser}. `change` returns
 * undefined to leave a user alone. Meant for changes of one role across its holders (SCIM
 * groups); it holds the matching users in memory.
 *
 * @returns the users that changed, as they are now.
 * @throws AppError as {@link updateUser} (the whole change is then undone).
 */
export async function updateUsers(
  store: Store,
  workspaceId: number,
  condition: UserCondition,
  change: (current: User) => UserChanges | undefined,
  actor: Actor,
): Promise<User[]> {
  return store.transaction(async (tx) => {
    const changed: User[] = [];
    for (const current of await tx.users.lockMatching(workspaceId, condition)) {
      const changes = change(snapshot(current));
      if (!changes) continue;
      const next = applyChanges(current, changes);
      if (unchanged(current, next)) continue;
      changed.push(snapshot(await writeChange(tx, workspaceId, current, next, actor, 'user.updated')));
    }
    return changed;
  });
}

/**
 * Finds a user of any status by email (case-insensitively) or id.
 * @throws AppError `user_not_found` (404).
 */
export async function getUser(store: Store, workspaceId: number, ref: UserRef): Promise<User> {
  const user = await store.users.find(workspaceId, ref);
  if (!user) throw notFound(ref);
  return snapshot(user);
}

/**
 * Lists one page of a workspace's users matching `query`, in its order, with exact totals.
 * The plain listing (no condition, creation order) reads the per-block counts; any filter or
 * other order is one statement that counts the matching users exactly.
 * Source: docs/contract.md Part B, Listing and Finding users.
 */
export async function listUsers(store: Store, workspaceId: number, query: UserQuery, page: PageRequest): Promise<Page<User>> {
  const plain = !query.where && (query.sort ?? 'created_at') === 'created_at' && !query.excludeScimDeleted;
  const { rows, total } = plain
    ? await store.users.findPage(workspaceId, query.status, page)
    : await store.users.findMatching(workspaceId, query, { offset: pageOffset(page), limit: page.pageSize });
  return { items: rows.map(snapshot), pagination: paginate(page, total) };
}

/**
 * A window of the users matching `query` (SCIM's `startIndex`/`count`), with the exact total.
 * Source: RFC 7644 §3.4.2.4.
 */
export async function findUsers(store: Store, workspaceId: number, query: UserQuery, window: RowWindow): Promise<Slice<User>> {
  const { rows, total } = await store.users.findMatching(workspaceId, query, window);
  return { rows: rows.map(snapshot), total };
}

/**
 * One page of a user's audit history (its events across renames), oldest first unless
 * `newestFirst`. Source: docs/console.md, "Using it" (a user's history).
 * @throws AppError `user_not_found` (404).
 */
export async function listUserAuditEvents(
  store: Store,
  workspaceId: number,
  ref: UserRef,
  page: PageRequest,
  newestFirst = false,
): Promise<Page<AuditEvent>> {
  const user = await getUser(store, workspaceId, ref);
  const { rows, total } = await store.audit.findPage(workspaceId, page, { userId: user.id, newestFirst });
  return { items: rows, pagination: paginate(page, total) };
}
