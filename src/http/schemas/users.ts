import { Type } from '@sinclair/typebox';
import { USER_SORTS } from '../../core/users/user-query.ts';
import { EMAIL_PATTERN } from '../../core/users/email.ts';
import { NullableTimestamp, PageQuery, PaginationSchema, StringEnum, Timestamp } from './common.ts';

/** `expires_at` as a client writes it: an RFC 3339 instant in the future, or null for never. */
const ExpiresAtInput = {
  ...NullableTimestamp,
  description: 'When the membership ends (RFC 3339): the user is then deactivated as `DELETE` would. Must be in the future (`422 expires_at_not_in_future`); null: never.',
  examples: ['2026-06-30T17:00:00Z'],
};

const Name = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: 255,
  description: 'At most 255 characters; null or omitted means "-" on creation and "keep" on reactivation.',
});

const ProductName = Type.String({ minLength: 1, maxLength: 64, description: 'A product name (`GET /products`).', examples: ['crm'] });
const RoleName = Type.String({ minLength: 1, maxLength: 64, description: 'One of that product\'s roles.', examples: ['admin'] });

/** One product role of a user (`apps[]`). */
export const AppRoleSchema = Type.Object(
  {
    name: ProductName,
    role: RoleName,
    expires_at: Type.Optional({
      ...NullableTimestamp,
      description: 'When this grant ends (RFC 3339, in the future): it is then removed and the user stays. Omitted or null: never.',
    }),
  },
  { additionalProperties: false, description: 'A role of the user in one product.' },
);

/** The user of the OpenAPI document's examples. */
export const USER_EXAMPLE = {
  id: '0b9e7f3c-4a51-4c2e-9d7a-6f1e2b3c4d5e',
  email: 'ada@example.com',
  role: 'non_owner',
  first_name: 'Ada',
  last_name: 'Lovelace',
  apps: [{ name: 'crm', role: 'member' }],
  status: 'active',
  expires_at: null,
  created_at: '2025-01-15T09:30:00.000Z',
  updated_at: '2025-01-15T09:30:00.000Z',
  last_active_at: null,
} as const;

/** Body of `POST /users` (docs/contract.md Part A; unknown fields rejected, Part B). */
export const AddUserBody = Type.Object(
  {
    user: Type.Object(
      {
        email: Type.String({
          pattern: EMAIL_PATTERN,
          maxLength: 254,
          description: 'The user\'s email, its identity in the workspace (matched case-insensitively).',
          examples: ['ada@example.com'],
        }),
        role: StringEnum(['owner', 'non_owner'], { description: 'Workspace role.' }),
        apps: Type.Array(AppRoleSchema, {
          description: 'Product roles; may be empty. Exact duplicates collapse into one. Replaced on reactivation.',
        }),
        first_name: Type.Optional(Name),
        last_name: Type.Optional(Name),
        expires_at: Type.Optional(ExpiresAtInput),
      },
      { additionalProperties: false, description: 'The user to add; unknown fields are refused.' },
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        user: {
          email: 'ada@example.com',
          role: 'non_owner',
          first_name: 'Ada',
          last_name: 'Lovelace',
          apps: [{ name: 'crm', role: 'member' }],
        },
      },
    ],
  },
);

/** A user on the wire (docs/contract.md Part B, Users). */
export const UserSchema = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'The user\'s id: given at creation, it never changes (not on rename, deactivation or reactivation).' }),
    email: Type.String({ description: 'The email as given (trimmed); matched case-insensitively.' }),
    role: StringEnum(['owner', 'non_owner'], { description: 'Workspace role.' }),
    first_name: Type.String({ description: '`-` when never given.' }),
    last_name: Type.String({ description: '`-` when never given.' }),
    apps: Type.Array(
      Type.Object({
        name: Type.String({ description: 'Product name.' }),
        role: Type.String({ description: 'Role in that product.' }),
        expires_at: Type.Optional({ ...Timestamp, description: 'When this grant ends (RFC 3339, UTC); absent: never.' }),
      }),
      { description: 'Product roles; a deactivated user keeps them, inactive, until reactivated.' },
    ),
    status: StringEnum(['active', 'deactivated'], { description: 'A deactivated user holds no access.' }),
    expires_at: {
      ...NullableTimestamp,
      description: 'When the membership ends (RFC 3339, UTC); null: never. Kept after the expiry deactivated the user; a reactivation clears a past one.',
    },
    created_at: { ...Timestamp, description: 'When the user was first added (RFC 3339, UTC).' },
    updated_at: { ...Timestamp, description: 'When the user last changed: later than `created_at` once deactivated or reactivated.' },
    last_active_at: {
      ...NullableTimestamp,
      description: 'The latest activity a product reported (`POST /users/activity`, RFC 3339, UTC); null until one is.',
    },
  },
  { $id: 'User', description: 'A user of the workspace.', examples: [USER_EXAMPLE] },
);

/** A product (`crm`) or one of its roles (`crm:admin`), as the `app` filter takes it. */
export const APP_FILTER_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(:[A-Za-z0-9][A-Za-z0-9._-]{0,63})?$';

/** Query of `GET /users` (docs/contract.md Part B, Listing and Finding users). */
export const ListUsersQuery = Type.Object({
  ...PageQuery,
  status: StringEnum(['active', 'deactivated', 'all'], {
    default: 'active',
    description: 'Which users to list: active ones (the default), deactivated ones, or all.',
    examples: ['active'],
  }),
  q: Type.Optional(
    Type.String({
      maxLength: 254,
      description: 'Search: users whose email, first name or last name starts with this text, ignoring case. Empty means no search.',
      examples: ['ada'],
    }),
  ),
  role: Type.Optional(StringEnum(['owner', 'non_owner'], { description: 'Only users with this workspace role.', examples: ['owner'] })),
  app: Type.Optional(
    Type.String({
      pattern: APP_FILTER_PATTERN,
      description: 'Only users holding a role in this product (`crm`), or this one role (`crm:admin`).',
      examples: ['crm:admin'],
    }),
  ),
  expires_before: Type.Optional({
    ...Timestamp,
    description: 'Only users whose membership ends before this instant (RFC 3339).',
    examples: ['2026-07-01T00:00:00Z'],
  }),
  inactive_since: Type.Optional({
    ...Timestamp,
    description: 'Only users not seen since this instant: `last_active_at` (or, never reported, `created_at`) before it (RFC 3339).',
    examples: ['2026-01-01T00:00:00Z'],
  }),
  sort: StringEnum(USER_SORTS, {
    default: 'created_at',
    description:
      'Order: by creation (`created_at`, the default, oldest first), by email ignoring case, or by `expires_at` (users that never ' +
      'expire last); `-` reverses.',
    examples: ['email'],
  }),
});

/** Response of `GET /users`. */
export const UserListSchema = Type.Object({
  users: Type.Array(Type.Ref(UserSchema), { description: 'This page of users, oldest first; empty past the end.' }),
  pagination: PaginationSchema,
  total_count: Type.Integer({ description: 'Total number of users across all pages.' }),
});

/** The user listing of the OpenAPI document's examples. */
export const USER_LIST_EXAMPLE = {
  users: [USER_EXAMPLE],
  pagination: { total_records: 1, current_page_number: 1, total_pages: 1, page_size: 30 },
  total_count: 1,
};

/** Body of `PATCH /users/{email}` (docs/contract.md Part B, Changing a user in place). */
export const PatchUserBody = Type.Object(
  {
    user: Type.Object(
      {
        email: Type.Optional(
          Type.String({ pattern: EMAIL_PATTERN, maxLength: 254, description: 'A new email (rename); no other user of the workspace may hold it.' }),
        ),
        role: Type.Optional(StringEnum(['owner', 'non_owner'], { description: 'Workspace role.' })),
        first_name: Type.Optional(
          Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 255, description: 'At most 255 characters; null resets it to "-".' }),
        ),
        last_name: Type.Optional(
          Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 255, description: 'At most 255 characters; null resets it to "-".' }),
        ),
        apps: Type.Optional(Type.Array(AppRoleSchema, { description: 'Replaces the whole set of product roles; may be empty.' })),
        status: Type.Optional(
          StringEnum(['active', 'deactivated'], { description: '`deactivated` deactivates; `active` reactivates, keeping role and apps.' }),
        ),
        expires_at: Type.Optional(ExpiresAtInput),
      },
      { additionalProperties: false, description: 'The fields to change; omitted fields stay as they are.' },
    ),
  },
  {
    additionalProperties: false,
    examples: [{ user: { role: 'owner', apps: [{ name: 'crm', role: 'admin' }] } }],
  },
);

/** Path parameters naming a user by email (percent-encoded in the path). */
export const EmailParams = Type.Object({
  email: Type.String({
    description: 'The user\'s email, percent-encoded in the path, matched case-insensitively.',
    examples: ['ada@example.com'],
  }),
});

export { toWireUser } from '../../core/users/wire-user.ts';
