import { AppError } from '../core/errors.ts';
import { groupName, type Group, type MembershipChange } from '../core/groups/group.ts';
import type { User } from '../core/users/user.ts';
import { URN } from './constants.ts';
import { matchesFilter, parseScimPath, type Filter } from './filter.ts';
import type { PatchOperation } from './patch-request.ts';
import { fromLibraryErrors, groupDefinition, normalizeBooleans, resolveAttribute } from './schema-definitions.ts';

/*
 * Groups are product roles (docs/contract.md Part B, SCIM 2.0 provisioning): a Group resource's
 * `displayName` is `"product:role"`, its members are the users holding that role. Changes of
 * `members` become grants and revocations (a MembershipChange), never a stored member list.
 */

/** The SCIM Group resource of `group`; `members` omitted when not asked for. Source: RFC 7643 §4.2. */
export function toGroupResource(group: Group, members: readonly User[] | undefined, baseUrl: string): Record<string, unknown> {
  return {
    schemas: [URN.group],
    id: group.id,
    ...(group.externalId === null ? {} : { externalId: group.externalId }),
    displayName: groupName(group),
    ...(members === undefined
      ? {}
      : {
          members: members.map((user) => ({
            value: user.id,
            display: displayOf(user),
            type: 'User',
            $ref: `${baseUrl}/Users/${user.id}`,
          })),
        }),
    meta: {
      resourceType: 'Group',
      created: group.createdAt.toISOString(),
      lastModified: group.updatedAt.toISOString(),
      location: `${baseUrl}/Groups/${group.id}`,
    },
  };
}

/** A member's `display`: the user's SCIM displayName if it has one, else its email. */
function displayOf(user: User): string {
  const displayName = (user.scimAttributes as { displayName?: unknown } | null)?.displayName;
  return typeof displayName === 'string' && displayName !== '' ? displayName : user.email;
}

/** A Group resource's attributes as a POST or PUT gives them. */
export interface GroupResourceState {
  readonly displayName: string;
  readonly externalId: string | null;
  /** Member user ids; undefined when `members` is absent. */
  readonly members?: readonly string[];
}

/**
 * Member ids of a `members` value: a list of `{value}` objects (or, leniently, of ids), one
 * such object, or one id.
 * @throws AppError `invalid_value` (400) for anything else.
 */
function memberIds(value: unknown): string[] {
  const items = Array.isArray(value) ? value : [value];
  return items.map((item) => {
    const id = typeof item === 'string' ? item : (item as { value?: unknown } | null)?.value;
    if (typeof id !== 'string' || id === '') throw new AppError('invalid_value', 'Each member must be an object with the user\'s id as value.');
    return id;
  });
}

/**
 * Reads a POST or PUT Group body (names in any case, unknown attributes ignored).
 * @throws AppError `invalid_syntax` (400) for a body that is not an object; `invalid_value`
 *   (400) without a string `displayName`, or with malformed members.
 */
export async function readGroupResource(body: unknown): Promise<GroupResourceState> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError('invalid_syntax', 'The Group resource must be a JSON object.');
  }
  const raw = body as Record<string, unknown>;
  // Members are read from the body as sent (ids only), not through the schema's coercion.
  const membersKey = Object.keys(raw).find((key) => key.toLowerCase() === 'members');
  const { [membersKey ?? 'members']: members, ...rest } = raw;
  const resource = (await fromLibraryErrors<unknown>(() => groupDefinition.coerce(normalizeBooleans(groupDefinition, rest), 'in'))) as {
    displayName?: unknown;
    externalId?: unknown;
  };
  if (typeof resource.displayName !== 'string') throw new AppError('invalid_value', 'displayName is required.');
  return {
    displayName: resource.displayName,
    externalId: typeof resource.externalId === 'string' ? resource.externalId : null,
    ...(members === undefined || members === null ? {} : { members: memberIds(members) }),
  };
}

/** The group changes a PATCH asks for. */
export interface GroupPatch {
  readonly displayName?: string;
  readonly externalId?: string | null;
  readonly members: MembershipChange;
}

/** A membership change being folded from operations, in their order. */
class MembershipFold {
  private base: 'keep' | 'none' = 'keep';
  private readonly add = new Set<string>();
  private readonly remove = new Set<string>();

  grant(ids: readonly string[]): void {
    for (const id of ids.map((i) => i.toLowerCase())) {
      this.add.add(id);
      this.remove.delete(id);
    }
  }

  revoke(ids: readonly string[]): void {
    for (const id of ids.map((i) => i.toLowerCase())) {
      this.remove.add(id);
      this.add.delete(id);
    }
  }

  revokeAll(): void {
    this.base = 'none';
    this.add.clear();
    this.remove.clear();
  }

  result(): MembershipChange {
    return { base: this.base, add: [...this.add], remove: [...this.remove] };
  }
}

/** The member ids a `members[…]` filter names: `value eq "…"`, possibly several joined by `or`. */
function idsOfMemberFilter(filter: Filter, path: string): string[] {
  if (filter.op === 'or') return filter.filters.flatMap((f) => idsOfMemberFilter(f, path));
  if (filter.op === 'eq' && filter.attrPath.toLowerCase() === 'value' && typeof filter.compValue === 'string') return [filter.compValue];
  throw new AppError('invalid_filter', `Only members[value eq "<user id>"] (joined by or) selects members: "${path}".`);
}

/** The canonical top-level Group attribute `name` names (`displayName`, `members`, `externalId`, …). */
function groupAttribute(name: string): string | undefined {
  return resolveAttribute(groupDefinition, name)?.path.join('.');
}

/** One operation on an attribute given by path or as a key of a path-less value. */
function applyToAttribute(
  attribute: string | undefined,
  operation: PatchOperation,
  value: unknown,
  state: { displayName?: string; externalId?: string | null; members: MembershipFold },
  where: string,
): void {
  switch (attribute) {
    case 'members':
      if (operation.op === 'replace') state.members.revokeAll();
      if (operation.op === 'remove') {
        if (value === undefined) state.members.revokeAll();
        else state.members.revoke(memberIds(value));
      } else {
        state.members.grant(memberIds(value));
      }
      return;
    case 'displayName':
      if (operation.op === 'remove') throw new AppError('mutability', 'A group\'s displayName cannot be removed.');
      if (typeof value !== 'string') throw new AppError('invalid_value', 'displayName must be a string.');
      state.displayName = value;
      return;
    case 'externalId':
      if (operation.op === 'remove' || value === null) state.externalId = null;
      else if (typeof value === 'string') state.externalId = value;
      else throw new AppError('invalid_value', 'externalId must be a string.');
      return;
    case 'id':
    case 'meta':
    case 'schemas':
      if (where === 'path') throw new AppError('mutability', `${attribute} cannot be changed.`);
      return;
    default:
      // Path-less values may carry attributes wum does not know: ignored (docs/contract.md Part B).
      if (where === 'path') throw new AppError('invalid_path', `The Group schema has no attribute "${operation.path}".`);
  }
}

/**
 * Reads PATCH operations on a group as Okta and Entra ID send them: `add`/`remove`/`replace`
 * of `members` (lists of `{value}`), `remove` of `members[value eq "…"]`, `remove` of
 * `members` with or without a value, `replace` of `displayName`/`externalId` by path or as a
 * path-less value. Pure: the caller applies the result. Source: RFC 7644 §3.5.2.
 *
 * @throws AppError `invalid_path` (400) for a path the Group schema lacks or a filtered path
 *   other than a member removal; `invalid_filter` (400) for a member filter other than
 *   `value eq`; `invalid_value` (400) for malformed values; `mutability` (400) for `id`/`meta`.
 */
export function readGroupPatch(operations: readonly PatchOperation[]): GroupPatch {
  const state: { displayName?: string; externalId?: string | null; members: MembershipFold } = { members: new MembershipFold() };
  for (const operation of operations) {
    if (operation.path === undefined) {
      if (typeof operation.value !== 'object' || operation.value === null || Array.isArray(operation.value)) {
        throw new AppError('invalid_value', 'An operation without path needs an object value.');
      }
      for (const [key, value] of Object.entries(operation.value)) {
        applyToAttribute(groupAttribute(key), operation, value, state, 'value');
      }
      continue;
    }
    const path = parseScimPath(operation.path);
    const attribute = groupAttribute(path.attribute);
    if (path.filter || path.subAttribute) {
      if (attribute !== 'members' || path.subAttribute || operation.op !== 'remove') {
        throw new AppError('invalid_path', `Only remove of members[value eq "<user id>"] is supported with a filter: "${operation.path}".`);
      }
      state.members.revoke(idsOfMemberFilter(path.filter!, operation.path));
      continue;
    }
    applyToAttribute(attribute, operation, operation.value, state, 'path');
  }
  return {
    ...(state.displayName === undefined ? {} : { displayName: state.displayName }),
    ...(state.externalId === undefined ? {} : { externalId: state.externalId }),
    members: state.members.result(),
  };
}

/** A group as a filter sees it: attributes, and those members the filter asks about. */
export interface FilterableGroup {
  readonly group: Group;
  /** Ids (of the users the filter names) that hold the group's role. */
  readonly members: readonly string[];
}

const FILTERABLE = new Set(['id', 'externalId', 'displayName', 'meta.created', 'meta.lastModified', 'members', 'members.value']);

/**
 * Checks a Group filter and returns the member ids it names (`members[value eq "…"]` or
 * `members.value eq "…"`, as Entra ID's membership checks send them), so the caller can look
 * up which groups they hold. Attributes: `id`, `externalId`, `displayName`, `meta.created`,
 * `meta.lastModified`, `members.value` (with `eq` only).
 *
 * @throws AppError `invalid_filter` (400) for other attributes or member comparisons.
 */
export function memberIdsOfGroupFilter(filter: Filter, within?: string): string[] {
  switch (filter.op) {
    case 'and':
    case 'or':
      return filter.filters.flatMap((f) => memberIdsOfGroupFilter(f, within));
    case 'not':
      return memberIdsOfGroupFilter(filter.filter, within);
    case '[]':
      if (within !== undefined || groupAttribute(filter.attrPath) !== 'members') {
        throw new AppError('invalid_filter', `Value filters are supported on members only: "${filter.attrPath}[…]".`);
      }
      return memberIdsOfGroupFilter(filter.valFilter, 'members');
    default: {
      const name = groupAttribute(within ? `${within}.${filter.attrPath}` : filter.attrPath);
      if (!name || !FILTERABLE.has(name)) throw new AppError('invalid_filter', `Groups cannot be filtered on "${filter.attrPath}".`);
      if (!name.startsWith('members')) return [];
      if (filter.op !== 'eq' || typeof filter.compValue !== 'string') {
        throw new AppError('invalid_filter', 'Members are filtered with value eq "<user id>" only.');
      }
      return [filter.compValue.toLowerCase()];
    }
  }
}

/** Whether a group satisfies a filter checked by {@link memberIdsOfGroupFilter}. */
export function groupMatches(candidate: FilterableGroup, filter: Filter): boolean {
  const { group } = candidate;
  return matchesFilter(
    {
      id: group.id,
      externalId: group.externalId ?? undefined,
      displayName: groupName(group),
      meta: { created: group.createdAt.toISOString(), lastModified: group.updatedAt.toISOString() },
      members: candidate.members.map((value) => ({ value })),
    },
    normalizeDates(filter),
  );
}

/** The filter with time values as RFC 3339 UTC text, the form group times are compared in. */
function normalizeDates(filter: Filter): Filter {
  switch (filter.op) {
    case 'and':
    case 'or':
      return { ...filter, filters: filter.filters.map(normalizeDates) };
    case 'not':
      return { ...filter, filter: normalizeDates(filter.filter) };
    case '[]':
      return filter;
    case 'pr':
      return filter;
    default: {
      if (!/^meta\./i.test(filter.attrPath) || typeof filter.compValue !== 'string') return filter;
      const at = new Date(filter.compValue);
      if (Number.isNaN(at.getTime())) throw new AppError('invalid_filter', `"${filter.attrPath}" is a dateTime: compare it with an RFC 3339 time.`);
      return { ...filter, compValue: at.toISOString() };
    }
  }
}
