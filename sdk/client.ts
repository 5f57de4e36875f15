import { randomUUID } from 'node:crypto';
import type { components, operations } from './schema.ts';
import { createTransport, everyItem, ITERATION_PAGE_SIZE, type TransportOptions } from './transport.ts';

/** A user of a workspace, as the API returns it. */
export type User = components['schemas']['User'];
/** A product and its roles. */
export type Product = components['schemas']['Product'];
/** The user to add (or reactivate): `email`, `role`, `apps`, optional names. */
export type NewUser = operations['addUser']['requestBody']['content']['application/json']['user'];
/** One product role of a user: `{ name, role }`. */
export type AppRole = NewUser['apps'][number];
/** Which users a listing returns: `active` (default), `deactivated` or `all`. */
export type StatusFilter = NonNullable<NonNullable<operations['listUsers']['parameters']['query']>['status']>;
/** Query of {@link UsersApi.list}: all optional (defaults page 1, 30 per page, active users). */
export type ListUsersQuery = NonNullable<operations['listUsers']['parameters']['query']>;
/** One page of users with its pagination envelope. */
export type UserPage = operations['listUsers']['responses'][200]['content']['application/json'];
/** The pagination envelope of a page. */
export type Pagination = UserPage['pagination'];

/** Path prefix of the external API (SPEC.md Part A). */
export const EXTERNAL_API_PREFIX = '/api/external/v2';

/** Options of {@link createClient}. */
export interface ClientOptions extends TransportOptions {
  /**
   * The workspace's address, e.g. `http://acme.localhost:3000` (the SDK appends
   * `/api/external/v2`; a URL that already ends with it is accepted too).
   */
  readonly baseUrl: string;
  /** An API key of that workspace (`wum_…`), sent as `X-Api-Key`. */
  readonly apiKey: string;
}

/** Options of {@link UsersApi.add}. */
export interface AddUserOptions {
  /**
   * The `Idempotency-Key` of this add. Default: a new random UUID per call, reused by the
   * call's own retries. Pass your own to make a retry across processes safe as well.
   */
  readonly idempotencyKey?: string;
}

/** The users of the workspace. */
export interface UsersApi {
  /**
   * Adds a user, or reactivates the deactivated user with that email (role and apps are
   * replaced; names replaced when given). Sends an `Idempotency-Key`, so the SDK may retry it
   * after a network failure or timeout without adding twice.
   * @returns the user: a reactivation has `updated_at` later than `created_at`.
   * @throws WumApiError `user_already_exists` (409) when an active user has the email;
   *   `unknown_product`/`unknown_product_role` (422); `validation_failed` (400).
   */
  add(user: NewUser, options?: AddUserOptions): Promise<User>;
  /**
   * Deactivates a user. Idempotent by contract (deactivating again succeeds), so it is retried
   * after a network failure.
   * @throws WumApiError `user_not_found` (404); `last_owner` (409).
   */
  remove(email: string): Promise<void>;
  /**
   * The user with this email (matched case-insensitively), of any status.
   * @throws WumApiError `user_not_found` (404).
   */
  get(email: string): Promise<User>;
  /**
   * One page of users, oldest first; an empty `users` array means the end.
   * @throws WumApiError `invalid_parameter` (400).
   */
  list(query?: ListUsersQuery): Promise<UserPage>;
  /**
   * Every user, page by page (`page_size`, default 100), until the empty page that marks the
   * end. Users added meanwhile appear at the end; with `status: 'active'`, a user deactivated
   * meanwhile can shift later pages, so use `status: 'all'` for a complete walk.
   */
  iterate(query?: Omit<ListUsersQuery, 'page_number'>): AsyncGenerator<User, void, undefined>;
}

/** The product catalogue as the workspace sees it. */
export interface ProductsApi {
  /** Every product and its roles, sorted by name. */
  list(): Promise<Product[]>;
}

/** A client of one workspace's API. */
export interface WumClient {
  readonly users: UsersApi;
  readonly products: ProductsApi;
  /** Closes idle connections (only needed to end a process quickly). */
  close(): Promise<void>;
}

/**
 * A client of a workspace's external API (`/api/external/v2`).
 *
 * Every call retries `429` and `503` (answered before anything is applied) with exponential
 * backoff and full jitter, never sooner than `Retry-After`. After a network failure or timeout
 * it retries only what is safe to repeat: reads, `users.remove` (idempotent by contract) and
 * `users.add` (which carries an `Idempotency-Key`). Failures throw {@link WumApiError}.
 *
 * @example
 * const wum = createClient({ baseUrl: 'http://acme.localhost:3000', apiKey: process.env.WUM_API_KEY! });
 * await wum.users.add({ email: 'ada@example.com', role: 'non_owner', apps: [{ name: 'crm', role: 'member' }] });
 * for await (const user of wum.users.iterate({ status: 'all' })) console.log(user.email, user.status);
 */
export function createClient(options: ClientOptions): WumClient {
  if (!options.apiKey) throw new TypeError('apiKey is required');
  const transport = createTransport(options, { 'X-Api-Key': options.apiKey }, EXTERNAL_API_PREFIX);
  const { api, call } = transport;
  const safe = { replayable: true };
  const userPath = (email: string) => `${EXTERNAL_API_PREFIX}/users/${encodeURIComponent(email)}`;

  const users: UsersApi = {
    async add(user, addOptions = {}) {
      const key = addOptions.idempotencyKey ?? randomUUID();
      const { data } = await call(`POST ${EXTERNAL_API_PREFIX}/users`, safe, (signal) =>
        api.POST('/api/external/v2/users', { body: { user }, params: { header: { 'Idempotency-Key': key } }, signal }),
      );
      return data!;
    },
    async remove(email) {
      await call(`DELETE ${userPath(email)}`, safe, (signal) =>
        api.DELETE('/api/external/v2/users/{email}', { params: { path: { email } }, signal }),
      );
    },
    async get(email) {
      const { data } = await call(`GET ${userPath(email)}`, safe, (signal) =>
        api.GET('/api/external/v2/users/{email}', { params: { path: { email } }, signal }),
      );
      return data!;
    },
    async list(query = {}) {
      const { data } = await call(`GET ${EXTERNAL_API_PREFIX}/users`, safe, (signal) =>
        api.GET('/api/external/v2/users', { params: { query }, signal }),
      );
      return data!;
    },
    iterate(query = {}) {
      const page_size = query.page_size ?? ITERATION_PAGE_SIZE;
      return everyItem(async (page_number) => (await users.list({ ...query, page_size, page_number })).users);
    },
  };

  const products: ProductsApi = {
    async list() {
      const { data } = await call(`GET ${EXTERNAL_API_PREFIX}/products`, safe, (signal) =>
        api.GET('/api/external/v2/products', { signal }),
      );
      return data!.products;
    },
  };

  return { users, products, close: () => transport.close() };
}
