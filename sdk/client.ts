import { randomUUID } from 'node:crypto';
import type { components, operations } from './schema.ts';
import { createTransport, everyItem, ITERATION_PAGE_SIZE, type TransportOptions } from './transport.ts';
import { selfServiceApis, type SelfServiceApis } from './self-service.ts';
import { importsApi, type ImportsApi } from './imports.ts';

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
/** The fields {@link UsersApi.update} changes: any of email, role, names, apps, status. */
export type UserChanges = operations['updateUser']['requestBody']['content']['application/json']['user'];
/** One audit event of a user's history. */
export type UserAuditEvent = operations['listUserAuditEvents']['responses'][200]['content']['application/json']['audit_events'][number];
/** Query of {@link UsersApi.history}: all optional (defaults page 1, 30 per page, oldest first). */
export type UserHistoryQuery = NonNullable<operations['listUserAuditEvents']['parameters']['query']>;
/** One page of a user's audit history with its pagination envelope. */
export type UserHistoryPage = operations['listUserAuditEvents']['responses'][200]['content']['application/json'];

/** One event of the feed: `{id, type, sequence, created_at, workspace: {subdomain}, data: {user, previous?}}`. */
export type WumEvent = components['schemas']['Event'];
/** Query of {@link EventsApi.list}: `after` (a sequence, default 0) and `limit` (1-1000, default 100). */
export type ListEventsQuery = NonNullable<operations['listEvents']['parameters']['query']>;
/** One page of the feed: `events` and `next_after`, the `after` of the next call. */
export type EventPage = operations['listEvents']['responses'][200]['content']['application/json'];

/** Path prefix of the external API (docs/contract.md Part A). */
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

/** Options of {@link UsersApi.update}. */
export interface UpdateUserOptions {
  /**
   * The user's `etag` as last read (`users.get` returns it); the change is refused with
   * `WumApiError` `precondition_failed` (412) if the user changed since. Default: no check.
   */
  readonly ifMatch?: string;
  /** The `Idempotency-Key` of this change. Default: a new random UUID per call, reused by its own retries. */
  readonly idempotencyKey?: string;
}

/**
 * A user with the entity tag of the version read, for {@link UpdateUserOptions.ifMatch}. The
 * `etag` is not enumerable: the object still equals, and serialises as, the API's user.
 */
export type UserWithEtag = User & { readonly etag: string };

/** `user` with its response's `ETag` attached as a non-enumerable `etag`. */
function withEtag(user: User, response: Response): UserWithEtag {
  return Object.defineProperty({ ...user }, 'etag', { value: response.headers.get('etag') ?? '', enumerable: false }) as UserWithEtag;
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
   * The user with this email (matched case-insensitively), of any status, with its `etag`.
   * @throws WumApiError `user_not_found` (404).
   */
  get(email: string): Promise<UserWithEtag>;
  /**
   * Changes the given fields of a user and keeps the others (`apps` replaces the whole set;
   * `first_name: null` resets to `-`; `email` renames; `status` deactivates or reactivates).
   * Sends an `Idempotency-Key`, so it is retried after a network failure.
   * @returns the user after the change, with its new `etag`.
   * @throws WumApiError `user_not_found` (404); `precondition_failed` (412) with `ifMatch`;
   *   `user_already_exists`/`last_owner` (409); `unknown_product`/`unknown_product_role` (422);
   *   `validation_failed` (400).
   */
  update(email: string, changes: UserChanges, options?: UpdateUserOptions): Promise<UserWithEtag>;
  /**
   * One page of users, oldest first unless `sort` says otherwise, narrowed by `status`, `q`
   * (prefix of email or names), `role` and `app` (`crm` or `crm:admin`); an empty `users`
   * array means the end.
   * @throws WumApiError `invalid_parameter` (400).
   */
  list(query?: ListUsersQuery): Promise<UserPage>;
  /**
   * One page of a user's audit history (its changes across renames), oldest first unless
   * `sort: '-occurred_at'`.
   * @throws WumApiError `user_not_found` (404).
   */
  history(email: string, query?: UserHistoryQuery): Promise<UserHistoryPage>;
  /**
   * Every user matching the filters, page by page (`page_size`, default 100), until the empty
   * page that marks the end. Users added meanwhile appear at the end; with `status: 'active'`
   * (or another filter), a user that stops matching meanwhile can shift later pages, so use
   * `status: 'all'` for a complete walk.
   */
  iterate(query?: Omit<ListUsersQuery, 'page_number'>): AsyncGenerator<User, void, undefined>;
  /** Bulk import jobs: upload a file, follow its job, read its report, cancel it. */
  readonly imports: ImportsApi;
}

/** The product catalogue as the workspace sees it. */
export interface ProductsApi {
  /** Every product and its roles, sorted by name. */
  list(): Promise<Product[]>;
}

/** The workspace's feed of user changes (the same events webhooks deliver). */
export interface EventsApi {
  /**
   * Up to `limit` (default 100, at most 1000) events with a sequence above `after` (default 0),
   * oldest first, and `next_after`, the `after` of the next call.
   * @throws WumApiError `invalid_parameter` (400).
   */
  list(query?: ListEventsQuery): Promise<EventPage>;
  /**
   * Every event after `after` (default 0) in sequence order, page by page (`limit`, default
   * 1000), until the feed is caught up. Call it again with the last `sequence` seen to go on.
   */
  iterate(query?: ListEventsQuery): AsyncGenerator<WumEvent, void, undefined>;
}

/**
 * A client of one workspace's API: its users, products and events, and (each behind its scope)
 * its API keys, identity provider, webhook endpoints, audit trail, policies and activity reports.
 */
export interface WumClient extends SelfServiceApis {
  readonly users: UsersApi;
  readonly products: ProductsApi;
  readonly events: EventsApi;
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
      const { data, response } = await call(`GET ${userPath(email)}`, safe, (signal) =>
        api.GET('/api/external/v2/users/{email}', { params: { path: { email } }, signal }),
      );
      return withEtag(data!, response);
    },
    async update(email, changes, updateOptions = {}) {
      const header = {
        'Idempotency-Key': updateOptions.idempotencyKey ?? randomUUID(),
        ...(updateOptions.ifMatch === undefined ? {} : { 'if-match': updateOptions.ifMatch }),
      };
      const { data, response } = await call(`PATCH ${userPath(email)}`, safe, (signal) =>
        api.PATCH('/api/external/v2/users/{email}', { params: { path: { email }, header }, body: { user: changes }, signal }),
      );
      return withEtag(data!, response);
    },
    async history(email, query = {}) {
      const { data } = await call(`GET ${userPath(email)}/audit-events`, safe, (signal) =>
        api.GET('/api/external/v2/users/{email}/audit-events', { params: { path: { email }, query }, signal }),
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
    imports: importsApi(transport, EXTERNAL_API_PREFIX),
  };

  const products: ProductsApi = {
    async list() {
      const { data } = await call(`GET ${EXTERNAL_API_PREFIX}/products`, safe, (signal) =>
        api.GET('/api/external/v2/products', { signal }),
      );
      return data!.products;
    },
  };

  const events: EventsApi = {
    async list(query = {}) {
      const { data } = await call(`GET ${EXTERNAL_API_PREFIX}/events`, safe, (signal) =>
        api.GET('/api/external/v2/events', { params: { query }, signal }),
      );
      return data!;
    },
    async *iterate(query = {}) {
      let after = query.after ?? 0;
      const limit = query.limit ?? 1000;
      for (;;) {
        const page = await events.list({ after, limit });
        yield* page.events;
        if (page.events.length < limit) return;
        after = page.next_after;
      }
    },
  };

  return { users, products, events, ...selfServiceApis(transport, EXTERNAL_API_PREFIX), close: () => transport.close() };
}
