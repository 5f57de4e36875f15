import type { Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Repositories, Store } from '../ports.ts';
import type { Slice } from '../pagination.ts';
import { assertAppsExist } from '../products/apps.ts';
import type { UserCondition } from '../users/user-query.ts';
import type { AppRole, User } from '../users/user.ts';
import { findUsers, updateUsers } from '../users/users-service.ts';
import { groupName, type Group, type MembershipChange } from './group.ts';

/*
 * SCIM groups are product roles (docs/contract.md Part B, SCIM 2.0 provisioning): linking one makes
 * the role assignable as a group, membership is holding the role, and every grant or
 * revocation is a user change through the same core function as the native API's, with its
 * rules, audit entry and event.
 */

/** The product role a group name `"product:role"` names. */
function roleOf(displayName: string): AppRole {
  const colon = displayName.indexOf(':');
  if (colon <= 0 || colon === displayName.length - 1) {
    throw new AppError('invalid_value', 'A group is a product role: its displayName must be "product:role" of the catalogue.');
  }
  return { name: displayName.slice(0, colon), role: displayName.slice(colon + 1) };
}

function notFound(id: string): AppError {
  return new AppError('group_not_found', `No group with id ${id} in this workspace.`);
}

/** The audit record of a group. */
function auditRecord(group: Group): Record<string, unknown> {
  return { id: group.id, display_name: groupName(group), external_id: group.externalId };
}

async function audit(tx: Repositories, workspaceId: number, actor: Actor, action: string, before: Group | null, after: Group | null) {
  await tx.audit.append({
    workspaceId,
    actor,
    action,
    targetType: 'group',
    targetId: groupName((after ?? before)!),
    before: before ? auditRecord(before) : null,
    after: after ? auditRecord(after) : null,
  });
}

/** The condition "holds the group's role". */
export function holdsRole(group: Group): UserCondition {
  return { op: 'eq', field: 'app', value: groupName(group), caseExact: true };
}

/**
 * Links the product role named `displayName` (`"product:role"`) as a group of the workspace.
 * Audited as `group.linked`.
 *
 * @throws AppError `invalid_value` (400) for a name that is not `"product:role"`;
 *   `unknown_product` / `unknown_product_role` (422) when the catalogue lacks it;
 *   `group_exists` (409) when the role is linked already.
 */
export async function linkGroup(
  store: Store,
  workspaceId: number,
  input: { readonly displayName: string; readonly externalId: string | null },
  actor: Actor,
): Promise<Group> {
  const app = roleOf(input.displayName);
  return store.transaction(async (tx) => {
    await assertAppsExist(tx.products, [app], 'displayName');
    const group = await tx.groups.insert(workspaceId, {
      id: crypto.randomUUID(),
      product: app.name,
      role: app.role,
      externalId: input.externalId,
    });
    await audit(tx, workspaceId, actor, 'group.linked', null, group);
    return group;
  });
}

/**
 * A linked group by id.
 * @throws AppError `group_not_found` (404).
 */
export async function getGroup(store: Store, workspaceId: number, id: string): Promise<Group> {
  const group = await store.groups.find(workspaceId, id);
  if (!group) throw notFound(id);
  return group;
}

/** Every group linked in the workspace, in linking order (at most one per product role of the catalogue). */
export async function listGroups(store: Store, workspaceId: number): Promise<Group[]> {
  return store.groups.findAll(workspaceId);
}

/**
 * Changes a group's attributes. A group is its product role, so `displayName` may only be
 * given unchanged; `externalId` is stored as sent. Audited as `group.updated` when it changes.
 *
 * @throws AppError `group_not_found` (404); `mutability` (400) for another displayName.
 */
export async function updateGroup(
  store: Store,
  workspaceId: number,
  id: string,
  changes: { readonly displayName?: string; readonly externalId?: string | null },
  actor: Actor,
): Promise<Group> {
  return store.transaction(async (tx) => {
    const current = await tx.groups.find(workspaceId, id, { lock: true });
    if (!current) throw notFound(id);
    if (changes.displayName !== undefined && changes.displayName !== groupName(current)) {
      throw new AppError('mutability', `A group is the product role ${groupName(current)}: its displayName cannot change.`);
    }
    if (changes.externalId === undefined || changes.externalId === current.externalId) return current;
    const updated = await tx.groups.update(workspaceId, id, { externalId: changes.externalId });
    await audit(tx, workspaceId, actor, 'group.updated', current, updated);
    return updated;
  });
}

/** The users a membership change concerns, and what each should then hold. */
function membershipPlan(group: Group, change: MembershipChange): { condition: UserCondition; holds: (user: User) => boolean } {
  const add = new Set(change.add.map((id) => id.toLowerCase()));
  const remove = new Set(change.remove.map((id) => id.toLowerCase()));
  const named: UserCondition = { op: 'in', field: 'id', values: [...add, ...remove] };
  return {
    condition: change.base === 'none' ? { op: 'or', conditions: [holdsRole(group), named] } : named,
    holds: (user) => add.has(user.id) || (!remove.has(user.id) && change.base === 'keep' && user.apps.some((a) => a.name === group.product && a.role === group.role)),
  };
}

/**
 * Grants and revokes the group's role as `change` says, in one transaction, each user changed
 * through the core's bulk change (its rules, audit entry and event). Ids of users that do
 * not exist in the workspace, or were deleted through SCIM, are ignored: an identity provider
 * that still lists a removed user must not fail the change for the others.
 *
 * @returns the users whose role changed.
 * @throws AppError as `updateUsers` (e.g. `unknown_product_role` when the role left the catalogue).
 */
export async function changeGroupMembers(
  store: Store,
  workspaceId: number,
  group: Group,
  change: MembershipChange,
  actor: Actor,
): Promise<User[]> {
  if (change.base === 'keep' && change.add.length === 0 && change.remove.length === 0) return [];
  const plan = membershipPlan(group, change);
  const role: AppRole = { name: group.product, role: group.role };
  return updateUsers(
    store,
    workspaceId,
    plan.condition,
    (user) => {
      const holds = user.apps.some((a) => a.name === role.name && a.role === role.role);
      const shouldHold = plan.holds(user);
      if (holds === shouldHold || (shouldHold && user.scimDeleted)) return undefined;
      return { apps: shouldHold ? [...user.apps, role] : user.apps.filter((a) => a.name !== role.name || a.role !== role.role) };
    },
    actor,
  );
}

/**
 * Unlinks a group: its role is revoked from every holder (first, so a retry after a failure
 * finds the group still there), then the link is removed. Audited as `group.unlinked`.
 *
 * @throws AppError `group_not_found` (404).
 */
export async function unlinkGroup(store: Store, workspaceId: number, id: string, actor: Actor): Promise<void> {
  const group = await getGroup(store, workspaceId, id);
  await changeGroupMembers(store, workspaceId, group, { base: 'none', add: [], remove: [] }, actor);
  await store.transaction(async (tx) => {
    const current = await tx.groups.find(workspaceId, id, { lock: true });
    if (!current) throw notFound(id);
    await tx.groups.delete(workspaceId, id);
    await audit(tx, workspaceId, actor, 'group.unlinked', current, null);
  });
}

/**
 * Up to `limit` members of a group (users holding its role, of any status, but not those
 * deleted through SCIM), oldest first, with their exact number.
 */
export async function groupMembers(store: Store, workspaceId: number, group: Group, limit: number): Promise<Slice<User>> {
  return findUsers(store, workspaceId, { status: 'all', where: holdsRole(group), excludeScimDeleted: true }, { offset: 0, limit });
}

/** Of the users `ids`, the groups (of `groups`) each holds: user id → group ids. For group filters on members. */
export async function membershipsOf(
  store: Store,
  workspaceId: number,
  ids: readonly string[],
  groups: readonly Group[],
): Promise<Map<string, Set<string>>> {
  const memberships = new Map<string, Set<string>>();
  if (ids.length === 0) return memberships;
  const { rows } = await findUsers(
    store,
    workspaceId,
    { status: 'all', where: { op: 'in', field: 'id', values: ids }, excludeScimDeleted: true },
    { offset: 0, limit: ids.length },
  );
  for (const user of rows) {
    const held = new Set(user.apps.map((a) => `${a.name}:${a.role}`));
    memberships.set(user.id, new Set(groups.filter((g) => held.has(groupName(g))).map((g) => g.id)));
  }
  return memberships;
}
