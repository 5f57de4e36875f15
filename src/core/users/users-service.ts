import type { Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import { paginate, type Page, type PageRequest } from '../pagination.ts';
import type { AuditEntry, Repositories, Store } from '../ports.ts';
import { appsInCatalogue, assertAppsExist, dedupeApps } from '../products/apps.ts';
import type { AppRole, StatusFilter, StoredUser, User, UserWrite, WorkspaceRole } from './user.ts';

/** The default for an omitted first or last name (SPEC.md Part A). */
export const NAME_PLACEHOLDER = '-';

/** Input of {@link addUser}: `firstName`/`lastName` undefined means omitted. */
export interface AddUserInput {
  readonly email: string;
  readonly role: WorkspaceRole;
  readonly apps: readonly AppRole[];
  readonly firstName?: string | undefined;
  readonly lastName?: string | undefined;
}

/** Result of {@link addUser}: the user, and whether an existing deactivated user was reactivated. */
export interface AddUserResult {
  readonly user: User;
  readonly reactivated: boolean;
}

/** The user as the audit trail records it (no database id). */
function snapshot(user: StoredUser): User {
  const { id: _id, ...rest } = user;
  return rest;
}

/** The user as audit events record it: the API's field names, without timestamps. */
function auditRecord(user: UserWrite) {
  return {
    email: user.email,
    role: user.role,
    first_name: user.firstName,
    last_name: user.lastName,
    apps: user.apps,
    status: user.status,
  };
}

/** The audit event of a change of user `email`. */
function userEvent(
  workspaceId: number,
  actor: Actor,
  action: string,
  email: string,
  before: UserWrite | undefined,
  after: UserWrite,
): AuditEntry {
  return {
    workspaceId,
    actor,
    action,
    targetType: 'user',
    targetId: email,
    before: before ? auditRecord(before) : null,
    after: auditRecord(after),
  };
}

/** Appends the audit event of a change of user `email`. */
async function audit(
  tx: Repositories,
  workspaceId: number,
  actor: Actor,
  action: string,
  email: string,
  before: StoredUser | undefined,
  after: StoredUser,
): Promise<void> {
  await tx.audit.append(userEvent(workspaceId, actor, action, email, before, after));
}

/**
 * Adds a user to a workspace, or reactivates a deactivated user with that email.
 * On reactivation `role` and `apps` are replaced and names are replaced only when given.
 * Source: SPEC.md Part A (`POST /users`) and Part B, Users.
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
  const apps = dedupeApps(input.apps);
  const user: UserWrite = {
    email: input.email,
    role: input.role,
    firstName: input.firstName ?? NAME_PLACEHOLDER,
    lastName: input.lastName ?? NAME_PLACEHOLDER,
    apps,
    status: 'active',
  };
  const created = userEvent(workspaceId, actor, 'user.created', user.email, undefined, user);
  // Most adds are new users with roles the catalogue has: checked against the (cached)
  // catalogue, one statement inserts the user, checking its roles again under a lock. Any other
  // case (the email taken, a role unknown or just removed) takes the transaction below.
  if (await appsInCatalogue(store.products, apps)) {
    const inserted = await store.users.insertIfAbsent(workspaceId, user, created);
    if (inserted) return { user: snapshot(inserted), reactivated: false };
  }
  return store.transaction(async (tx) => {
    await assertAppsExist(tx.products, apps, 'user.apps');
    const inserted = await tx.users.insertIfAbsent(workspaceId, user, created);
    if (inserted) return { user: snapshot(inserted), reactivated: false };
    const existing = await tx.users.findByEmail(workspaceId, input.email, { lock: true });
    if (!existing || existing.status === 'active') {
      throw new AppError('user_already_exists', `An active user with email ${input.email} already exists.`);
    }
    const reactivated = await tx.users.replace(workspaceId, existing.id, {
      ...user,
      email: existing.email,
      firstName: input.firstName ?? existing.firstName,
      lastName: input.lastName ?? existing.lastName,
    });
    await audit(tx, workspaceId, actor, 'user.reactivated', reactivated.email, existing, reactivated);
    return { user: snapshot(reactivated), reactivated: true };
  });
}

/**
 * Deactivates a user. Deactivating an already deactivated user changes nothing and
 * succeeds, so a retried offboarding call does not fail. The workspace row is locked
 * before the owner count, so two concurrent removals cannot leave no active owner.
 * Source: SPEC.md Part B, Users (`DELETE /users/{email}`).
 *
 * @returns whether the call changed anything.
 * @throws AppError `user_not_found` (404); `last_owner` (409) for the last active owner.
 */
export async function deactivateUser(
  store: Store,
  workspaceId: number,
  email: string,
  actor: Actor,
): Promise<{ changed: boolean }> {
  return store.transaction(async (tx) => {
    const user = await tx.users.findByEmail(workspaceId, email, { lock: true });
    if (!user) throw new AppError('user_not_found', `No user with email ${email} in this workspace.`);
    if (user.status === 'deactivated') return { changed: false };
    if (user.role === 'owner') {
      await tx.workspaces.lock(workspaceId);
      if ((await tx.users.countActiveOwners(workspaceId)) <= 1) {
        throw new AppError('last_owner', `${user.email} is the last active owner of this workspace.`);
      }
    }
    const after = await tx.users.setStatus(workspaceId, user.id, 'deactivated');
    await audit(tx, workspaceId, actor, 'user.deactivated', user.email, user, after);
    return { changed: true };
  });
}

/**
 * Finds a user of any status by email, case-insensitively.
 * @throws AppError `user_not_found` (404).
 */
export async function getUser(store: Store, workspaceId: number, email: string): Promise<User> {
  const user = await store.users.findByEmail(workspaceId, email);
  if (!user) throw new AppError('user_not_found', `No user with email ${email} in this workspace.`);
  return snapshot(user);
}

/**
 * Lists one page of a workspace's users, oldest first, with exact totals.
 * Source: SPEC.md Part B, Listing.
 */
export async function listUsers(
  store: Store,
  workspaceId: number,
  status: StatusFilter,
  page: PageRequest,
): Promise<Page<User>> {
  const { rows, total } = await store.users.findPage(workspaceId, status, page);
  return { items: rows.map(snapshot), pagination: paginate(page, total) };
}
