/*
 * The workspace API (`/api/external/v2`) as the console uses it, typed from sdk/schema.ts.
 * `usersApi` has the SDK's shapes (`add`, `list`, `iterate`), so the CLI's import code
 * (sdk/users-import-rows.ts) runs on it unchanged.
 */
import type { components, operations } from '../../../sdk/schema.ts';
import type { ImportClient } from '../../../sdk/users-import-rows.ts';
import { api, etagOf, send } from './client.ts';

/** A user of the workspace. */
export type User = components['schemas']['User'];
/** A product and its roles, as the workspace sees the catalogue. */
export type Product = components['schemas']['Product'];
/** The user to add: `email`, `role`, `apps`, optional names. */
export type NewUser = operations['addUser']['requestBody']['content']['application/json']['user'];
/** One product role: `{ name, role }`. */
export type AppRole = NewUser['apps'][number];
/** The fields a PATCH changes. */
export type UserChanges = operations['updateUser']['requestBody']['content']['application/json']['user'];
/** Query of the users listing: page, size, status, q, role, app, sort. */
export type ListUsersQuery = NonNullable<operations['listUsers']['parameters']['query']>;
/** One page of users with its totals. */
export type UserPage = operations['listUsers']['responses'][200]['content']['application/json'];
/** One page of a user's audit history. */
export type UserHistoryPage = operations['listUserAuditEvents']['responses'][200]['content']['application/json'];
/** Query of a user's audit history. */
export type UserHistoryQuery = NonNullable<operations['listUserAuditEvents']['parameters']['query']>;

/** A user with the `ETag` of the version read (for `If-Match`). */
export interface VersionedUser {
  readonly user: User;
  readonly etag: string;
}

const USERS = '/api/external/v2/users';
const path = (email: string) => ({ path: { email } });

/** The workspace's users. Every call throws WumApiError on failure (see `send`). */
export const usersApi = {
  /** One page of users matching the filters. */
  async list(query: ListUsersQuery = {}, signal?: AbortSignal): Promise<UserPage> {
    return (await send(`GET ${USERS}`, (s) => api.GET(USERS, { params: { query }, signal: s }), signal)).data;
  },
  /** Every user matching the filters, 100 a page, until the empty page that marks the end. */
  async *iterate(query: Omit<ListUsersQuery, 'page_number'> = {}, signal?: AbortSignal): AsyncGenerator<User> {
    for (let page_number = 1; ; page_number += 1) {
      const { users } = await usersApi.list({ page_size: 100, ...query, page_number }, signal);
      if (users.length === 0) return;
      yield* users;
    }
  },
  /** The user with this email (any status) and its version. @throws `user_not_found`. */
  async get(email: string, signal?: AbortSignal): Promise<VersionedUser> {
    const { data, response } = await send(`GET ${USERS}/{email}`, (s) => api.GET(`${USERS}/{email}`, { params: path(email), signal: s }), signal);
    return { user: data, etag: etagOf(response) };
  },
  /** Adds a user, or reactivates the deactivated user with that email. */
  async add(user: NewUser): Promise<User> {
    return (await send(`POST ${USERS}`, (s) => api.POST(USERS, { body: { user }, signal: s }))).data;
  },
  /** Changes the given fields when the user is still at version `etag`. @throws `precondition_failed` (412). */
  async update(email: string, changes: UserChanges, etag: string): Promise<VersionedUser> {
    const { data, response } = await send(`PATCH ${USERS}/{email}`, (s) =>
      api.PATCH(`${USERS}/{email}`, { params: path(email), headers: { 'if-match': etag }, body: { user: changes }, signal: s }),
    );
    return { user: data, etag: etagOf(response) };
  },
  /** Deactivates a user (again: no change), when still at version `etag` if given. */
  async remove(email: string, etag?: string): Promise<void> {
    await send(`DELETE ${USERS}/{email}`, (s) =>
      api.DELETE(`${USERS}/{email}`, { params: path(email), headers: etag ? { 'if-match': etag } : {}, signal: s }),
    );
  },
  /** One page of the user's audit history. */
  async history(email: string, query: UserHistoryQuery, signal?: AbortSignal): Promise<UserHistoryPage> {
    return (await send(`GET ${USERS}/{email}/audit-events`, (s) => api.GET(`${USERS}/{email}/audit-events`, { params: { ...path(email), query }, signal: s }), signal)).data;
  },
} satisfies ImportClient['users'] & Record<string, unknown>;

/** The product catalogue as this workspace sees it: products sorted by name, each with its roles. */
export async function listProducts(signal?: AbortSignal): Promise<Product[]> {
  const PRODUCTS = '/api/external/v2/products';
  return (await send(`GET ${PRODUCTS}`, (s) => api.GET(PRODUCTS, { signal: s }), signal)).data.products;
}
