import { Type } from '@sinclair/typebox';
import type { User } from '../../core/users/user.ts';
import { PageQuery, PaginationSchema, StringEnum, Timestamp } from './common.ts';

const Name = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  maxLength: 255,
  description: 'At most 255 characters; null or omitted means "-" on creation and "keep" on reactivation.',
});

const ProductName = Type.String({ minLength: 1, maxLength: 64, examples: ['crm'] });
const RoleName = Type.String({ minLength: 1, maxLength: 64, examples: ['admin'] });

/** One product role of a user (`apps[]`). */
export const AppRoleSchema = Type.Object(
  { name: ProductName, role: RoleName },
  { additionalProperties: false },
);

/** Body of `POST /users` (SPEC.md Part A; unknown fields rejected, Part B). */
export const AddUserBody = Type.Object(
  {
    user: Type.Object(
      {
        email: Type.String({ format: 'email', maxLength: 254, examples: ['ada@example.com'] }),
        role: StringEnum(['owner', 'non_owner']),
        apps: Type.Array(AppRoleSchema),
        first_name: Type.Optional(Name),
        last_name: Type.Optional(Name),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** A user on the wire (SPEC.md Part B, Users). */
export const UserSchema = Type.Object(
  {
    email: Type.String(),
    role: StringEnum(['owner', 'non_owner']),
    first_name: Type.String(),
    last_name: Type.String(),
    apps: Type.Array(Type.Object({ name: Type.String(), role: Type.String() })),
    status: StringEnum(['active', 'deactivated']),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'User' },
);

/** Query of `GET /users`. */
export const ListUsersQuery = Type.Object({
  ...PageQuery,
  status: StringEnum(['active', 'deactivated', 'all'], { default: 'active', description: 'Which users to list.' }),
});

/** Response of `GET /users`. */
export const UserListSchema = Type.Object({
  users: Type.Array(Type.Ref(UserSchema)),
  pagination: PaginationSchema,
  total_count: Type.Integer({ description: 'Total number of users across all pages.' }),
});

/** Path parameters naming a user by email (percent-encoded in the path). */
export const EmailParams = Type.Object({ email: Type.String({ description: 'Email, matched case-insensitively.' }) });

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
