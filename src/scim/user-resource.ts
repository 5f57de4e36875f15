import addFormats from 'ajv-formats';
import { AppError } from '../core/errors.ts';
import { foldEmail } from '../core/users/email.ts';
import type { AppRole, ScimAttributes, User, UserStatus, WorkspaceRole } from '../core/users/user.ts';
import { URN } from './constants.ts';
import { fromLibraryErrors, normalizeBooleans, userDefinition } from './schema-definitions.ts';

/*
 * A core user ↔ a SCIM User resource (docs/contract.md Part B, SCIM 2.0 provisioning): `id` = the
 * user's id, `userName` = email, `name.givenName`/`name.familyName` = first and last name,
 * `emails` = the email as the work and primary entry followed by the further entries an
 * identity provider stored, `active` = status, `externalId` as sent, `roles[].value` =
 * `"product:role"` apps, the workspace role in wum's extension, `meta` with the version
 * (the ETag). Every other attribute of the User schema and its enterprise extension is kept
 * as sent (canonical names) so that an identity provider reads back what it wrote; the
 * password never is.
 */

/** The email rule of the native API (the `email` format it validates `user.email` with), ≤ 254 characters. */
const EMAIL = addFormats.default.get('email') as RegExp;
const MAX_EMAIL_LENGTH = 254;
/** Longest first or last name (docs/contract.md Part B, Users). */
const MAX_NAME_LENGTH = 255;

/** Attributes of a User resource that wum models, or derives, or never keeps. */
const MODELLED = new Set(['schemas', 'id', 'meta', 'externalId', 'userName', 'active', 'roles', 'groups', 'password', URN.wumUser]);

/** A user's state as a SCIM resource gives it; undefined fields are not given (kept, or defaulted on creation). */
export interface UserResourceState {
  readonly email: string;
  /** Null: none given (`-`). */
  readonly firstName: string | null;
  readonly lastName: string | null;
  readonly externalId: string | null;
  readonly scimAttributes: ScimAttributes | null;
  readonly status?: UserStatus;
  readonly role?: WorkspaceRole;
  readonly apps?: readonly AppRole[];
}

/**
 * How a resource is read: `create` (POST: absent `active`, `roles`, `workspaceRole` take
 * their defaults), `replace` (PUT: absent access attributes are kept, so a PUT that does not
 * carry roles granted through groups does not revoke them), `patched` (a resource wum
 * rendered, changed by PATCH operations: an absent attribute was removed).
 */
export type ResourceReading = 'create' | 'replace' | 'patched';

/** The ETag of a user at `version`, as `meta.version` and the `ETag` header carry it (the native API's). */
export function scimUserVersion(version: number): string {
  return `"${version}"`;
}

/**
 * The SCIM User resource of `user`. `baseUrl` is the absolute SCIM base
 * (`https://acme.example.com/scim/v2`) for `meta.location`. Source: RFC 7643 §4.1, §3.1.
 */
export function toUserResource(user: User, baseUrl: string): Record<string, unknown> {
  const kept = (user.scimAttributes ?? {}) as Record<string, unknown>;
  const { name: keptName, emails: keptEmails, [URN.enterpriseUser]: enterprise, ...profile } = kept;
  const extraEmails: unknown[] = Array.isArray(keptEmails) ? (keptEmails as unknown[]) : [];
  return {
    schemas: [URN.user, ...(enterprise === undefined ? [] : [URN.enterpriseUser]), URN.wumUser],
    id: user.id,
    ...(user.externalId === null ? {} : { externalId: user.externalId }),
    userName: user.email,
    name: { ...(typeof keptName === 'object' && keptName !== null ? keptName : {}), givenName: user.firstName, familyName: user.lastName },
    ...profile,
    active: user.status === 'active',
    emails: [{ value: user.email, type: 'work', primary: true }, ...extraEmails],
    roles: user.apps.map((app) => ({ value: `${app.name}:${app.role}` })),
    ...(enterprise === undefined ? {} : { [URN.enterpriseUser]: enterprise }),
    [URN.wumUser]: { workspaceRole: user.role },
    meta: {
      resourceType: 'User',
      created: user.createdAt.toISOString(),
      lastModified: user.updatedAt.toISOString(),
      location: `${baseUrl}/Users/${user.id}`,
      version: scimUserVersion(user.version),
    },
  };
}

/** `value` checked to be a JSON object. */
function objectOf(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AppError('invalid_syntax', `${what} must be a JSON object.`);
  }
  return value as Record<string, unknown>;
}

/** The email of `userName`. */
function emailOf(userName: unknown): string {
  if (typeof userName !== 'string' || userName.trim() === '') throw new AppError('invalid_value', 'userName is required.');
  const email = userName.trim();
  if (email.length > MAX_EMAIL_LENGTH || !EMAIL.test(email)) {
    throw new AppError('invalid_value', `userName must be an email address of at most ${MAX_EMAIL_LENGTH} characters (it is the user's email).`);
  }
  return email;
}

/** A first or last name, or null when absent. */
function nameOf(value: unknown, attribute: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length > MAX_NAME_LENGTH) {
    throw new AppError('invalid_value', `${attribute} must be a string of at most ${MAX_NAME_LENGTH} characters.`);
  }
  return value;
}

/** The apps of `roles` (`value` = `"product:role"`). */
function appsOf(roles: unknown): AppRole[] {
  if (!Array.isArray(roles)) return [];
  return roles.map((role: { value?: unknown }) => {
    const value = role?.value;
    const colon = typeof value === 'string' ? value.indexOf(':') : -1;
    if (typeof value !== 'string' || colon <= 0 || colon === value.length - 1) {
      throw new AppError('invalid_value', 'Each roles[].value must be "product:role", a role of the product catalogue.');
    }
    return { name: value.slice(0, colon), role: value.slice(colon + 1) };
  });
}

/** The workspace role of wum's extension, if given. */
function workspaceRoleOf(extension: unknown): WorkspaceRole | undefined {
  const role = (extension as { workspaceRole?: unknown } | undefined)?.workspaceRole;
  if (role === undefined || role === null) return undefined;
  if (role !== 'owner' && role !== 'non_owner') throw new AppError('invalid_value', 'workspaceRole must be owner or non_owner.');
  return role;
}

/** The SCIM attributes wum keeps of a canonical resource (everything it does not model). */
function keptAttributes(resource: Record<string, unknown>, email: string): ScimAttributes | null {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(resource)) {
    if (!MODELLED.has(key) && value !== undefined && value !== null) kept[key] = value;
  }
  const { givenName: _given, familyName: _family, ...nameRest } = (kept.name ?? {}) as Record<string, unknown>;
  if (Object.keys(nameRest).length > 0) kept.name = nameRest;
  else delete kept.name;
  // The email itself is the derived first entry; one primary address only (RFC 7643 §2.4).
  const emails = Array.isArray(kept.emails) ? (kept.emails as Array<Record<string, unknown>>) : [];
  const extra = emails
    .filter((e) => typeof e?.value !== 'string' || foldEmail(e.value) !== foldEmail(email))
    .map((e) => (e?.primary === true ? { ...e, primary: false } : e));
  if (extra.length > 0) kept.emails = extra;
  else delete kept.emails;
  return Object.keys(kept).length > 0 ? kept : null;
}

/**
 * Reads a User resource: a POST or PUT body (attribute names in any case, `"True"`/`"False"`
 * for booleans, unknown attributes ignored, read-only ones such as `id` and `meta` ignored)
 * or a resource changed by PATCH. Source: RFC 7643 §2.1, §4.1; RFC 7644 §3.3, §3.5.1;
 * docs/contract.md Part B, SCIM 2.0 provisioning.
 *
 * @throws AppError `invalid_syntax` (400) when the body is no JSON object; `invalid_value`
 *   (400) for a missing or non-email `userName`, a value of the wrong type, a role that is not
 *   `"product:role"`, a `workspaceRole` other than owner/non_owner.
 */
export async function readUserResource(body: unknown, reading: ResourceReading): Promise<UserResourceState> {
  const raw = objectOf(body, 'The User resource');
  // SCIMMY's coerced values are accessor objects with unset attributes as undefined: read them as plain JSON.
  const resource =
    reading === 'patched'
      ? raw
      : (JSON.parse(JSON.stringify(await fromLibraryErrors<unknown>(() => userDefinition.coerce(normalizeBooleans(userDefinition, raw), 'in')))) as Record<string, unknown>);
  const email = emailOf(resource.userName);
  const name = (resource.name ?? {}) as { givenName?: unknown; familyName?: unknown };
  const active = resource.active;
  const wum = resource[URN.wumUser];
  const role = workspaceRoleOf(wum) ?? (reading === 'replace' ? undefined : 'non_owner');
  const hasRoles = Array.isArray(resource.roles);
  const apps = hasRoles || reading !== 'replace' ? appsOf(resource.roles) : undefined;
  const status: UserStatus | undefined =
    typeof active === 'boolean' ? (active ? 'active' : 'deactivated') : reading === 'create' ? 'active' : undefined;
  return {
    email,
    firstName: nameOf(name.givenName, 'name.givenName'),
    lastName: nameOf(name.familyName, 'name.familyName'),
    externalId: typeof resource.externalId === 'string' ? resource.externalId : null,
    scimAttributes: keptAttributes(resource, email),
    ...(status === undefined ? {} : { status }),
    ...(role === undefined ? {} : { role }),
    ...(apps === undefined ? {} : { apps }),
  };
}
