import type { AppRole, User, UserWrite } from './user.ts';

/*
 * The user as the API shows it, defined once: the HTTP response (http/schemas/users.ts), the
 * event payload (built in SQL by storage/user-sql.ts from the same table, which the
 * compiler holds to it) and the audit snapshot (users-service.ts) all read this table.
 */

/** The fields a change can alter, in the API's names, each with the domain field it shows. */
export const CHANGEABLE_WIRE_FIELDS = [
  ['email', 'email'],
  ['role', 'role'],
  ['first_name', 'firstName'],
  ['last_name', 'lastName'],
  ['apps', 'apps'],
  ['status', 'status'],
  ['expires_at', 'expiresAt'],
] as const satisfies ReadonlyArray<readonly [string, keyof UserWrite]>;

/** Every field of the wire user, in the API's order: `id`, the changeable fields, the timestamps. */
export const WIRE_USER_FIELDS = [
  ['id', 'id'],
  ...CHANGEABLE_WIRE_FIELDS,
  ['created_at', 'createdAt'],
  ['updated_at', 'updatedAt'],
  ['last_active_at', 'lastActiveAt'],
] as const satisfies ReadonlyArray<readonly [string, keyof User]>;

/** A domain field the wire user shows. */
export type WireUserSource = (typeof WIRE_USER_FIELDS)[number][1];

/** One product role as the API shows it: `expires_at` only when the grant ends. */
export interface WireAppRole {
  name: string;
  role: string;
  expires_at?: Date;
}

/** The user as the API shows it (timestamps as instants; the serializer writes RFC 3339). */
export type WireUser = { -readonly [F in (typeof WIRE_USER_FIELDS)[number] as F[0]]: F[0] extends 'apps' ? WireAppRole[] : User[F[1]] };

/** Domain apps → wire apps (`expires_at` present only on a grant that ends). */
export function toWireApps(apps: readonly AppRole[]): WireAppRole[] {
  return apps.map((app) => (app.expiresAt ? { name: app.name, role: app.role, expires_at: app.expiresAt } : { name: app.name, role: app.role }));
}

/** Domain value of a wire field: apps in their wire shape, everything else as is. */
function wireValue(user: UserWrite, field: keyof UserWrite): unknown {
  return field === 'apps' ? toWireApps(user.apps) : user[field];
}

/**
 * Domain user → wire user: `{id, email, role, first_name, last_name, apps, status, expires_at,
 * created_at, updated_at, last_active_at}`. Written out as one object literal rather than built
 * from {@link WIRE_USER_FIELDS}: a page maps every user on it, and the table-driven version
 * (entries, then `Object.fromEntries`) cost a page of 30 users about 6 % of the server's CPU
 * (docs/performance.md, "The fixed cost of a request"). The type `WireUser` holds the literal
 * to the table's fields; the response schema sets the order of the JSON.
 */
export function toWireUser(user: User): WireUser {
  return {
    id: user.id,
    email: user.email,
    role: user.role,
    first_name: user.firstName,
    last_name: user.lastName,
    apps: toWireApps(user.apps),
    status: user.status,
    expires_at: user.expiresAt,
    created_at: user.createdAt,
    updated_at: user.updatedAt,
    last_active_at: user.lastActiveAt,
  };
}

/**
 * The user as audit events record it: its id and the changeable fields in the API's names,
 * without timestamps.
 */
export function auditSnapshot(id: string, user: UserWrite): Record<string, unknown> {
  return { id, ...Object.fromEntries(CHANGEABLE_WIRE_FIELDS.map(([wire, field]) => [wire, wireValue(user, field)])) };
}

/** The changeable fields that differ between `before` and `after`, with their values before (API names). */
export function previousWireFields(before: UserWrite, after: UserWrite): Record<string, unknown> {
  return Object.fromEntries(
    CHANGEABLE_WIRE_FIELDS.filter(([, field]) => JSON.stringify(before[field]) !== JSON.stringify(after[field])).map(([wire, field]) => [
      wire,
      wireValue(before, field),
    ]),
  );
}
