import { Type } from '@sinclair/typebox';
import type { User } from '../../core/users/user.ts';
import { PageQuery, PaginationSchema, StringEnum, Timestamp } from './common.ts';

const Name = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: 255,
  description: 'At most 255 characters; null or omitted means "-" on creation and "keep" on reactivation.',
});

const ProductName = Type.String({ minLength: 1, maxLength: 64, description: 'A product name (`GET /products`).', examples: ['crm'] });
const RoleName = Type.String({ minLength: 1, maxLength: 64, description: 'One of that product\'s roles.', examples: ['admin'] });

/** One product role of a user (`apps[]`). */
export const AppRoleSchema = Type.Object(
  { name: ProductName, role: RoleName },
  { additionalProperties: false, description: 'A role of the user in one product.' },
);

/** The user of the OpenAPI document's examples. */
export const USER_EXAMPLE = {
  email: 'ada@example.com',
  role: 'non_owner',
  first_name: 'Ada',
  last_name: 'Lovelace',
  apps: [{ name: 'crm', role: 'member' }],
  status: 'active',
  created_at: '2025-01-15T09:30:00.000Z',
  updated_at: '2025-01-15T09:30:00.000Z',
} as const;

/** Body of `POST /users` (SPEC.md Part A; unknown fields rejected, Part B). */
export const AddUserBody = Type.Object(
  {
    user: Type.Object(
      {
        email: Type.String({
          format: 'email',
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

/** A user on the wire (SPEC.md Part B, Users). */
export const UserSchema = Type.Object(
  {
    email: Type.String({ description: 'The email as first given (trimmed).' }),
    role: StringEnum(['owner', 'non_owner'], { description: 'Workspace role.' }),
    first_name: Type.String({ description: '`-` when never given.' }),
    last_name: Type.String({ description: '`-` when never given.' }),
    apps: Type.Array(
      Type.Object({ name: Type.String({ description: 'Product name.' }), role: Type.String({ description: 'Role in that product.' }) }),
      { description: 'Product roles; a deactivated user keeps them, inactive, until reactivated.' },
    ),
    status: StringEnum(['active', 'deactivated'], { description: 'A deactivated user holds no access.' }),
    created_at: { ...Timestamp, description: 'When the user was first added (RFC 3339, UTC).' },
    updated_at: { ...Timestamp, description: 'When the user last changed: later than `created_at` once deactivated or reactivated.' },
  },
  { $id: 'User', description: 'A user of the workspace.', examples: [USER_EXAMPLE] },
);

/** Query of `GET /users`. */
export const ListUsersQuery = Type.Object({
  ...PageQuery,
  status: StringEnum(['active', 'deactivated', 'all'], {
    default: 'active',
    description: 'Which users to list: active ones (the default), deactivated ones, or all.',
    examples: ['active'],
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

/** Path parameters naming a user by email (percent-encoded in the path). */
export const EmailParams = Type.Object({
  email: Type.String({
    description: 'The user\'s email, percent-encoded in the path, matched case-insensitively.',
    examples: ['ada@example.com'],
  }),
});

/** Domain user → wire user. */
export function toWireUser(user: User) {
  return {
    email: user.email,
    role: user.role,
    first_name: user.firstName,
    last_name: user.lastName,
    apps: [...user.apps],
    status: user.status,
    created_at: user.createdAt,
    updated_at: user.updatedAt,
  };
}
