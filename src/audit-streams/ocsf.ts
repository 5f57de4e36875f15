import type { Actor } from '../core/actor.ts';
import type { AuditEvent } from '../core/audit/audit-repository.ts';

/*
 * The `ocsf` format of audit streams: each audit row as an event of the Open Cybersecurity
 * Schema Framework, of the class that fits it. The mapping table is in docs/api.md, "OCSF mapping".
 */

/** The OCSF version the events follow (metadata.version). */
export const OCSF_VERSION = '1.8.0';

/** The classes used: [class_uid, category_uid, class name, category name]. */
const CLASSES = {
  accountChange: [3001, 3, 'Account Change', 'Identity & Access Management'],
  userAccess: [3005, 3, 'User Access Management', 'Identity & Access Management'],
  groupManagement: [3006, 3, 'Group Management', 'Identity & Access Management'],
  apiActivity: [6003, 6, 'API Activity', 'Application Activity'],
} as const;

type ClassKey = keyof typeof CLASSES;

/** Where a row lands: its class, its activity (id and caption), and what the class adds. */
interface Classified {
  readonly class: ClassKey;
  readonly activityId: number;
  readonly activityName: string;
  readonly extra: Record<string, unknown>;
  /** What the class has no attribute for, kept in `unmapped`. */
  readonly unmapped?: Record<string, unknown>;
}

/** One audit row as an OCSF event: the base event's attributes, and those of its class. */
export interface OcsfEvent {
  readonly class_uid: number;
  readonly class_name: string;
  readonly category_uid: number;
  readonly category_name: string;
  readonly activity_id: number;
  readonly activity_name: string;
  readonly type_uid: number;
  readonly type_name: string;
  /** When the change happened, in ms since the epoch. */
  readonly time: number;
  readonly severity_id: 1;
  readonly severity: 'Informational';
  /** 1 Success: an audit row records a change that committed. */
  readonly status_id: 1;
  readonly status: 'Success';
  readonly message: string;
  readonly metadata: Record<string, unknown>;
  readonly actor: Record<string, unknown>;
  readonly src_endpoint: { readonly name: string };
  readonly unmapped: Record<string, unknown>;
  readonly [attribute: string]: unknown;
}

/** A plain object without its undefined and null members: OCSF leaves an attribute out rather than null. */
function compact(object: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined && value !== null));
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** The privileges a user snapshot holds: `role:<workspace role>` and `app:<product>:<role>` per product role. */
function privilegesOf(snapshot: Record<string, unknown> | undefined): Set<string> {
  const held = new Set<string>();
  if (!snapshot) return held;
  if (typeof snapshot.role === 'string') held.add(`role:${snapshot.role}`);
  for (const app of Array.isArray(snapshot.apps) ? snapshot.apps : []) {
    const grant = record(app);
    if (typeof grant?.name === 'string' && typeof grant.role === 'string') held.add(`app:${grant.name}:${grant.role}`);
  }
  return held;
}

const minus = (a: Set<string>, b: Set<string>) => [...a].filter((p) => !b.has(p));

/** OCSF user type_id: 2 Admin for a workspace owner, 1 User otherwise. */
function userTypeId(snapshot: Record<string, unknown> | undefined): number {
  return snapshot?.role === 'owner' ? 2 : 1;
}

/** The user a user row is about: its `id`, its email (the row's target), its workspace role as type. */
function targetUser(event: AuditEvent): Record<string, unknown> {
  const snapshot = record(event.after) ?? record(event.before);
  const email = str(snapshot?.email) ?? event.targetId;
  const typeId = userTypeId(snapshot);
  return compact({ uid: event.userId ?? str(snapshot?.id), name: email, email_addr: email.includes('@') ? email : undefined, type_id: typeId, type: typeId === 2 ? 'Admin' : 'User' });
}

/**
 * A `user.updated` row that changes what the user holds: a SCIM client adding the user to or
 * removing it from one group (a group is a product role) is Group Management Add/Remove User;
 * any other change of role or product roles is User Access Management, Assign Privileges when
 * it grants any (those granted in `privileges`, any revoked at once in `unmapped.revoked_privileges`),
 * else Revoke Privileges.
 */
function privilegeChange(event: AuditEvent): Classified | undefined {
  const before = privilegesOf(record(event.before));
  const after = privilegesOf(record(event.after));
  const granted = minus(after, before);
  const revoked = minus(before, after);
  if (granted.length === 0 && revoked.length === 0) return undefined;
  const user = targetUser(event);
  const membership = granted.length + revoked.length === 1 && (granted[0] ?? revoked[0])!.startsWith('app:');
  if (event.actor.type === 'scim' && membership) {
    const group = (granted[0] ?? revoked[0])!.slice('app:'.length);
    return granted.length === 1
      ? { class: 'groupManagement', activityId: 3, activityName: 'Add User', extra: { group: { name: group, type: 'product role' }, user } }
      : { class: 'groupManagement', activityId: 4, activityName: 'Remove User', extra: { group: { name: group, type: 'product role' }, user } };
  }
  return granted.length > 0
    ? { class: 'userAccess', activityId: 1, activityName: 'Assign Privileges', extra: { user, privileges: granted }, ...(revoked.length > 0 ? { unmapped: { revoked_privileges: revoked } } : {}) }
    : { class: 'userAccess', activityId: 2, activityName: 'Revoke Privileges', extra: { user, privileges: revoked } };
}

/** Verbs of actions that make something, and that end something (docs/api.md lists the actions). */
const CREATE_VERBS = new Set(['created', 'linked', 'signed_in']);
const DELETE_VERBS = new Set(['deleted', 'removed', 'revoked', 'unlinked', 'signed_out']);

/** API Activity: Create, Update or Delete by the action's verb, else by what the row held before and after. */
function apiActivity(event: AuditEvent): Classified {
  const verb = event.action.slice(event.action.lastIndexOf('.') + 1);
  const [activityId, activityName] = CREATE_VERBS.has(verb)
    ? [1, 'Create']
    : DELETE_VERBS.has(verb)
      ? [4, 'Delete']
      : event.before === null && event.after !== null
        ? [1, 'Create']
        : [3, 'Update'];
  return {
    class: 'apiActivity',
    activityId,
    activityName,
    extra: { api: { operation: event.action }, resources: [compact({ type: event.targetType, uid: event.targetId })] },
  };
}

function classify(event: AuditEvent): Classified {
  switch (event.action) {
    case 'user.created':
      return { class: 'accountChange', activityId: 1, activityName: 'Create', extra: { user: targetUser(event) } };
    case 'user.deactivated':
      return { class: 'accountChange', activityId: 5, activityName: 'Disable', extra: { user: targetUser(event) } };
    case 'user.reactivated':
      return { class: 'accountChange', activityId: 2, activityName: 'Enable', extra: { user: targetUser(event) } };
    case 'user.updated':
      return privilegeChange(event) ?? apiActivity(event);
    case 'group.linked':
    case 'group.unlinked': {
      const group = record(event.after) ?? record(event.before);
      const extra = { group: compact({ uid: str(group?.id), name: event.targetId, type: 'product role' }) };
      return event.action === 'group.linked'
        ? { class: 'groupManagement', activityId: 6, activityName: 'Create', extra }
        : { class: 'groupManagement', activityId: 5, activityName: 'Delete', extra };
    }
    default:
      return apiActivity(event);
  }
}

/** The way a change came in, as the source endpoint's name: audit rows keep no client address. */
const CHANNELS: Record<Actor['type'], string> = {
  person: 'console',
  api_key: 'api',
  scim: 'scim',
  operator: 'admin_api',
  system: 'server',
  policy: 'server',
};

/** Who made the change: a person or the operator as `actor.user`, a key, SCIM client, policy or the server as the app. */
function actorOf(actor: Actor): Record<string, unknown> {
  if (actor.type === 'person' || actor.type === 'operator') {
    const admin = actor.type === 'operator';
    return {
      user: compact({
        uid: actor.id,
        name: actor.label ?? actor.type,
        email_addr: actor.label?.includes('@') ? actor.label : undefined,
        type_id: admin ? 2 : 1,
        type: admin ? 'Admin' : 'User',
      }),
    };
  }
  return compact({ app_name: actor.label ?? actor.type, app_uid: actor.id });
}

/**
 * One audit row as an OCSF event (docs/api.md, "OCSF mapping"; OCSF 1.8.0): Account Change
 * (3001) for a user created, deactivated or reactivated; User Access Management (3005) for a
 * change of a user's workspace role or product roles; Group Management (3006) for SCIM group
 * membership and groups linked or unlinked; API Activity (6003) for everything else. The
 * row's own fields (action, target, before, after, workspace, actor type) are kept in `unmapped`.
 * `product` names this server in `metadata.product`.
 */
export function toOcsf(event: AuditEvent & { readonly workspace?: string | null }, product: { name: string; version: string }): OcsfEvent {
  const classified = classify(event);
  const [classUid, categoryUid, className, categoryName] = CLASSES[classified.class];
  return {
    class_uid: classUid,
    class_name: className,
    category_uid: categoryUid,
    category_name: categoryName,
    activity_id: classified.activityId,
    activity_name: classified.activityName,
    type_uid: classUid * 100 + classified.activityId,
    type_name: `${className}: ${classified.activityName}`,
    time: event.occurredAt.getTime(),
    severity_id: 1,
    severity: 'Informational',
    status_id: 1,
    status: 'Success',
    message: `${event.action} ${event.targetType} ${event.targetId}`,
    metadata: compact({
      product: { name: product.name, vendor_name: product.name, version: product.version },
      uid: String(event.id),
      version: OCSF_VERSION,
      log_name: 'audit',
      correlation_uid: event.actor.requestId,
      tenant_uid: event.workspace,
    }),
    actor: actorOf(event.actor),
    src_endpoint: { name: CHANNELS[event.actor.type] },
    ...classified.extra,
    unmapped: compact({
      action: event.action,
      actor_type: event.actor.type,
      target_type: event.targetType,
      target_id: event.targetId,
      workspace: event.workspace,
      before: event.before,
      after: event.after,
      ...classified.unmapped,
    }),
  };
}
