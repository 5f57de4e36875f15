import type { operations } from './schema.ts';
import { auditStreamsApi, type AuditStreamsApi, type NewOperatorAuditStream } from './audit-streams.ts';
import { createTransport, everyEvent, everyItem, ITERATION_PAGE_SIZE, type TransportOptions } from './transport.ts';

type Json<Op extends keyof operations, Status extends keyof operations[Op]['responses']> =
  operations[Op]['responses'][Status] extends { content: { 'application/json': infer Body } } ? Body : never;

/** A workspace. */
export type Workspace = Json<'getWorkspace', 200>;
/** A new workspace with its first API key (the plaintext `api_key.key` is shown only once). */
export type CreatedWorkspace = Json<'createWorkspace', 201>;
/** One page of workspaces. */
export type WorkspacePage = Json<'listWorkspaces', 200>;
/** An API key without its secret. */
export type ApiKey = Json<'listApiKeys', 200>['api_keys'][number];
/** A new API key with its plaintext `key`, shown only once. */
export type CreatedApiKey = Json<'createApiKey', 201>;
/** What a new API key is made with: `name`, `scopes` (every scope when omitted), `expires_at`; all optional. */
export type NewApiKey = NonNullable<operations['createApiKey']['requestBody']>['content']['application/json'];
/** A scope an API key can carry (`users:read`, `users:write`, `products:read`, `events:read`, `scim`). */
export type ApiKeyScope = ApiKey['scopes'][number];
/** Who made a change: `{type, id, label}` (a person, an API key, SCIM, the operator, the server). */
export type Actor = AuditEvent['actor'];
/** A product of the catalogue, with timestamps. */
export type CatalogueProduct = Json<'getCatalogueProduct', 200>;
/** One page of audit events. */
export type AuditEventPage = Json<'listAuditEvents', 200>;
/** One audit event. */
export type AuditEvent = AuditEventPage['audit_events'][number];
/** Page query of admin listings: `page_number` (from 1) and `page_size` (1-100), both optional. */
export type PageQuery = NonNullable<operations['listWorkspaces']['parameters']['query']>;
/**
 * Query of audit listings: page or cursor (`starting_after`), the filters `action`,
 * `actor_type`, `target_id`, `since`, `until` (and `workspace` on the global list), and `sort`.
 */
export type AuditQuery = NonNullable<operations['listAuditEvents']['parameters']['query']>;

/** A webhook endpoint (never its secret). */
export type WebhookEndpoint = Json<'getWebhookEndpoint', 200>;
/** A webhook endpoint with its signing `secret` (`whsec_…`), shown only by create and rotate. */
export type WebhookEndpointWithSecret = Json<'createWebhookEndpoint', 201>;
/** What creating an endpoint takes: `url`, optional `description` and `event_types`. */
export type NewWebhookEndpoint = operations['createWebhookEndpoint']['requestBody']['content']['application/json'];
/** The fields an update changes: any of `url`, `description`, `event_types`, `enabled`. */
export type WebhookEndpointChanges = operations['updateWebhookEndpoint']['requestBody']['content']['application/json'];
/** One page of an endpoint's deliveries, newest first. */
export type WebhookDeliveryPage = Json<'listWebhookDeliveries', 200>;
/** One delivery with its attempts. */
export type WebhookDelivery = WebhookDeliveryPage['deliveries'][number];

/** What a rotation of the secrets key did: `key_id` now encrypting every secret, `reencrypted`, `undecryptable`. */
export type SecretsKeyRotation = Json<'rotateSecretsKey', 200>;

/** Path prefix of the admin API. */
export const ADMIN_API_PREFIX = '/admin/v1';

/** Options of {@link createAdminClient}. */
export interface AdminClientOptions extends TransportOptions {
  /** Where the service is, e.g. `http://localhost:3000` (the admin API answers on any host). */
  readonly baseUrl: string;
  /** The service's `ADMIN_TOKEN`, sent as `Authorization: Bearer …`. */
  readonly adminToken: string;
}

/** Workspaces. */
export interface WorkspacesApi {
  /**
   * Creates a workspace and its first API key. Not retried after a network failure (it is not
   * idempotent): on `network_error`, look the workspace up before you create it again.
   * @throws WumApiError `validation_failed` (400); `workspace_exists` (409).
   */
  create(workspace: { subdomain: string; name?: string }): Promise<CreatedWorkspace>;
  /** One page of workspaces, oldest first. */
  list(query?: PageQuery): Promise<WorkspacePage>;
  /** Every workspace, page by page, until the empty page. */
  iterate(query?: Omit<PageQuery, 'page_number'>): AsyncGenerator<Workspace, void, undefined>;
  /** @throws WumApiError `workspace_not_found` (404). */
  get(subdomain: string): Promise<Workspace>;
  /**
   * Deletes a workspace with all its users, keys and audit trail. Not retried after a network
   * failure (a repeat of an applied delete would answer `404`).
   * @throws WumApiError `workspace_not_found` (404).
   */
  delete(subdomain: string): Promise<void>;
}

/** A workspace's identity provider, as shown: never its client secret. */
export type IdentityProvider = Json<'getIdentityProvider', 200>;
/** What sets a workspace's identity provider: issuer URL, client id, client secret. */
export type IdentityProviderConfig = NonNullable<operations['setIdentityProvider']['requestBody']>['content']['application/json'];

/** The OpenID Connect identity provider a workspace's people sign in to the console with. */
export interface IdentityProvidersApi {
  /**
   * Sets (creates or replaces) it; a change ends the console sessions opened with the previous one.
   * Idempotent in effect, so retried after a network failure.
   * @returns the configuration without the secret, and whether it was created (201) rather than replaced (200).
   * @throws WumApiError `validation_failed` (400); `workspace_not_found` (404).
   */
  set(subdomain: string, config: IdentityProviderConfig): Promise<{ provider: IdentityProvider; created: boolean }>;
  /** @throws WumApiError `workspace_not_found`, `identity_provider_not_found` (404). */
  get(subdomain: string): Promise<IdentityProvider>;
  /**
   * Tests the stored one's discovery again, changing nothing.
   * @throws WumApiError `identity_provider_not_found` (404); `identity_provider_*` (422).
   */
  test(subdomain: string): Promise<IdentityProvider>;
  /** Removes it. @throws WumApiError `workspace_not_found`, `identity_provider_not_found` (404). */
  remove(subdomain: string): Promise<void>;
}

/** A workspace's inactivity policy: `deactivate_after`, `applies_to`, `warn_before`. */
export type WorkspaceInactivityPolicy = Json<'getWorkspaceInactivityPolicy', 200>;
/** A workspace's warning before expiries: `warn_before` (null: none). */
export type WorkspaceExpiryPolicy = Json<'getWorkspaceExpiryPolicy', 200>;

/** A workspace's access policies, as its owners see them on its own API. */
export interface WorkspacePoliciesApi {
  /** @throws WumApiError `workspace_not_found`, `policy_not_found` (404). */
  getInactivity(subdomain: string): Promise<WorkspaceInactivityPolicy>;
  /** Sets the inactivity policy. @throws WumApiError `invalid_duration` (422). */
  putInactivity(subdomain: string, policy: WorkspaceInactivityPolicy): Promise<WorkspaceInactivityPolicy>;
  /** Removes it. @throws WumApiError `policy_not_found` (404). */
  deleteInactivity(subdomain: string): Promise<void>;
  /** @throws WumApiError `workspace_not_found` (404). */
  getExpiry(subdomain: string): Promise<WorkspaceExpiryPolicy>;
  /** Sets the warning before expiries. @throws WumApiError `invalid_duration` (422). */
  putExpiry(subdomain: string, policy: WorkspaceExpiryPolicy): Promise<WorkspaceExpiryPolicy>;
}

/** API keys of a workspace. */
export interface ApiKeysApi {
  /**
   * Adds a key to the workspace, with a name, scopes and an expiry when given; its plaintext is in
   * the result only. Not retried after a network failure.
   * @throws WumApiError `validation_failed` (400: an unknown scope, an expiry in the past).
   */
  create(subdomain: string, key?: NewApiKey): Promise<CreatedApiKey>;
  /** Every key of the workspace, revoked ones included, never the plaintext. */
  list(subdomain: string): Promise<ApiKey[]>;
  /** Revokes a key (idempotent: revoking again succeeds). @throws WumApiError `api_key_not_found` (404). */
  revoke(subdomain: string, id: string): Promise<void>;
}

/** The product catalogue. */
export interface CatalogueApi {
  /**
   * Creates the product with these roles, or replaces its roles (idempotent: putting the same
   * roles again changes nothing).
   * @returns the product, and whether it was created (201) rather than replaced (200).
   * @throws WumApiError `product_in_use` (409) when a dropped role is held by an active user.
   */
  put(name: string, roles: string[]): Promise<{ product: CatalogueProduct; created: boolean }>;
  /** Every product, sorted by name. */
  list(): Promise<CatalogueProduct[]>;
  /** @throws WumApiError `product_not_found` (404). */
  get(name: string): Promise<CatalogueProduct>;
  /**
   * Removes a product. Not retried after a network failure (a repeat would answer `404`).
   * @throws WumApiError `product_not_found` (404); `product_in_use` (409).
   */
  delete(name: string): Promise<void>;
}

/** Audit trail. */
export interface AuditApi {
  /**
   * One page of a workspace's audit events, or of every event when `subdomain` is undefined,
   * oldest first unless `sort: '-occurred_at'`, narrowed by the filters of `query`.
   */
  list(subdomain?: string, query?: AuditQuery): Promise<AuditEventPage>;
  /**
   * Every event of a workspace (or of all, `subdomain` undefined) the query selects, read page
   * by page with the cursor, so events written meanwhile neither repeat nor shift it.
   */
  iterate(subdomain?: string, query?: Omit<AuditQuery, 'page_number'>): AsyncGenerator<AuditEvent, void, undefined>;
}

/** Webhook endpoints of a workspace and their deliveries. */
export interface WebhooksApi {
  /**
   * Creates an endpoint; its `secret` is in the result only. Not retried after a network failure.
   * @throws WumApiError `validation_failed` (400) when the URL is refused (https only, no private addresses).
   */
  create(subdomain: string, endpoint: NewWebhookEndpoint): Promise<WebhookEndpointWithSecret>;
  /** Every endpoint of the workspace, oldest first. */
  list(subdomain: string): Promise<WebhookEndpoint[]>;
  /** @throws WumApiError `webhook_endpoint_not_found` (404). */
  get(subdomain: string, id: string): Promise<WebhookEndpoint>;
  /**
   * Changes the given fields (`enabled: true` re-enables a disabled endpoint).
   * @throws WumApiError `webhook_endpoint_not_found` (404); `validation_failed` (400).
   */
  update(subdomain: string, id: string, changes: WebhookEndpointChanges): Promise<WebhookEndpoint>;
  /** Deletes an endpoint. Not retried after a network failure. @throws WumApiError `webhook_endpoint_not_found` (404). */
  delete(subdomain: string, id: string): Promise<void>;
  /**
   * Gives the endpoint a new secret (in the result only); the old one still signs for 24 h.
   * Not retried after a network failure.
   */
  rotateSecret(subdomain: string, id: string): Promise<WebhookEndpointWithSecret>;
  /** One page of the endpoint's deliveries, newest first, each with its attempts. */
  deliveries(subdomain: string, id: string, query?: PageQuery): Promise<WebhookDeliveryPage>;
  /**
   * Sends a delivery again (same `webhook-id`).
   * @throws WumApiError `webhook_delivery_not_found` (404); `webhook_endpoint_disabled` (409).
   */
  redeliver(subdomain: string, id: string, deliveryId: string): Promise<WebhookDelivery>;
}

/** A client of the operator API (`/admin/v1`). */
export interface WumAdminClient {
  readonly webhooks: WebhooksApi;
  readonly workspaces: WorkspacesApi;
  readonly apiKeys: ApiKeysApi;
  readonly identityProviders: IdentityProvidersApi;
  readonly products: CatalogueApi;
  readonly auditEvents: AuditApi;
  /** Audit streams of one workspace or of every one (`workspace` null), with their health. */
  readonly auditStreams: AuditStreamsApi<NewOperatorAuditStream>;
  readonly policies: WorkspacePoliciesApi;
  /**
   * Re-encrypts every stored secret with the server's `SECRETS_KEY` (after a key change; the
   * old key in `SECRETS_KEY_PREVIOUS`). Idempotent, so retried after a network failure too.
   */
  rotateSecretsKey(): Promise<SecretsKeyRotation>;
  /** Closes idle connections (only needed to end a process quickly). */
  close(): Promise<void>;
}

/**
 * A client of the operator API (`/admin/v1`, served on any host but a workspace's when the service has an
 * `ADMIN_TOKEN`). Retries follow the same rules as {@link createClient}: 429 and 503 always;
 * network failures only for reads and idempotent calls (product put, key revoke).
 *
 * @example
 * const admin = createAdminClient({ baseUrl: 'http://localhost:3000', adminToken: process.env.WUM_ADMIN_TOKEN! });
 * const { api_key } = await admin.workspaces.create({ subdomain: 'acme', name: 'Acme Inc' });
 */
export function createAdminClient(options: AdminClientOptions): WumAdminClient {
  if (!options.adminToken) throw new TypeError('adminToken is required');
  const transport = createTransport(options, { Authorization: `Bearer ${options.adminToken}` }, ADMIN_API_PREFIX);
  const { api, call } = transport;
  const safe = { replayable: true };
  const once = { replayable: false };
  const ws = (subdomain: string) => `${ADMIN_API_PREFIX}/workspaces/${encodeURIComponent(subdomain)}`;
  const product = (name: string) => `${ADMIN_API_PREFIX}/products/${encodeURIComponent(name)}`;

  const workspaces: WorkspacesApi = {
    async create(body) {
      const { data } = await call(`POST ${ADMIN_API_PREFIX}/workspaces`, once, (signal) =>
        api.POST('/admin/v1/workspaces', { body, signal }),
      );
      return data!;
    },
    async list(query = {}) {
      const { data } = await call(`GET ${ADMIN_API_PREFIX}/workspaces`, safe, (signal) =>
        api.GET('/admin/v1/workspaces', { params: { query }, signal }),
      );
      return data!;
    },
    iterate(query = {}) {
      const page_size = query.page_size ?? ITERATION_PAGE_SIZE;
      return everyItem(async (page_number) => (await workspaces.list({ page_size, page_number })).workspaces);
    },
    async get(subdomain) {
      const { data } = await call(`GET ${ws(subdomain)}`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}', { params: { path: { subdomain } }, signal }),
      );
      return data!;
    },
    async delete(subdomain) {
      await call(`DELETE ${ws(subdomain)}`, once, (signal) =>
        api.DELETE('/admin/v1/workspaces/{subdomain}', { params: { path: { subdomain } }, signal }),
      );
    },
  };

  const identityProviders: IdentityProvidersApi = {
    async set(subdomain, config) {
      const { data, response } = await call(`PUT ${ws(subdomain)}/identity-provider`, safe, (signal) =>
        api.PUT('/admin/v1/workspaces/{subdomain}/identity-provider', { params: { path: { subdomain } }, body: config, signal }),
      );
      return { provider: data!, created: response.status === 201 };
    },
    async get(subdomain) {
      const { data } = await call(`GET ${ws(subdomain)}/identity-provider`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}/identity-provider', { params: { path: { subdomain } }, signal }),
      );
      return data!;
    },
    async test(subdomain) {
      const { data } = await call(`POST ${ws(subdomain)}/identity-provider/test`, safe, (signal) =>
        api.POST('/admin/v1/workspaces/{subdomain}/identity-provider/test', { params: { path: { subdomain } }, signal }),
      );
      return data!;
    },
    async remove(subdomain) {
      await call(`DELETE ${ws(subdomain)}/identity-provider`, once, (signal) =>
        api.DELETE('/admin/v1/workspaces/{subdomain}/identity-provider', { params: { path: { subdomain } }, signal }),
      );
    },
  };

  const policies: WorkspacePoliciesApi = {
    async getInactivity(subdomain) {
      const { data } = await call(`GET ${ws(subdomain)}/policies/inactivity`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}/policies/inactivity', { params: { path: { subdomain } }, signal }),
      );
      return data!;
    },
    async putInactivity(subdomain, body) {
      const { data } = await call(`PUT ${ws(subdomain)}/policies/inactivity`, safe, (signal) =>
        api.PUT('/admin/v1/workspaces/{subdomain}/policies/inactivity', { params: { path: { subdomain } }, body, signal }),
      );
      return data!;
    },
    async deleteInactivity(subdomain) {
      await call(`DELETE ${ws(subdomain)}/policies/inactivity`, once, (signal) =>
        api.DELETE('/admin/v1/workspaces/{subdomain}/policies/inactivity', { params: { path: { subdomain } }, signal }),
      );
    },
    async getExpiry(subdomain) {
      const { data } = await call(`GET ${ws(subdomain)}/policies/expiry`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}/policies/expiry', { params: { path: { subdomain } }, signal }),
      );
      return data!;
    },
    async putExpiry(subdomain, body) {
      const { data } = await call(`PUT ${ws(subdomain)}/policies/expiry`, safe, (signal) =>
        api.PUT('/admin/v1/workspaces/{subdomain}/policies/expiry', { params: { path: { subdomain } }, body, signal }),
      );
      return data!;
    },
  };

  const apiKeys: ApiKeysApi = {
    async create(subdomain, key = {}) {
      const { data } = await call(`POST ${ws(subdomain)}/api-keys`, once, (signal) =>
        api.POST('/admin/v1/workspaces/{subdomain}/api-keys', { params: { path: { subdomain } }, body: key, signal }),
      );
      return data!;
    },
    async list(subdomain) {
      const { data } = await call(`GET ${ws(subdomain)}/api-keys`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}/api-keys', { params: { path: { subdomain } }, signal }),
      );
      return data!.api_keys;
    },
    async revoke(subdomain, id) {
      await call(`DELETE ${ws(subdomain)}/api-keys/${encodeURIComponent(id)}`, safe, (signal) =>
        api.DELETE('/admin/v1/workspaces/{subdomain}/api-keys/{id}', { params: { path: { subdomain, id } }, signal }),
      );
    },
  };

  const products: CatalogueApi = {
    async put(name, roles) {
      const { data, response } = await call(`PUT ${product(name)}`, safe, (signal) =>
        api.PUT('/admin/v1/products/{name}', { params: { path: { name } }, body: { roles }, signal }),
      );
      return { product: data!, created: response.status === 201 };
    },
    async list() {
      const { data } = await call(`GET ${ADMIN_API_PREFIX}/products`, safe, (signal) =>
        api.GET('/admin/v1/products', { signal }),
      );
      return data!.products;
    },
    async get(name) {
      const { data } = await call(`GET ${product(name)}`, safe, (signal) =>
        api.GET('/admin/v1/products/{name}', { params: { path: { name } }, signal }),
      );
      return data!;
    },
    async delete(name) {
      await call(`DELETE ${product(name)}`, once, (signal) =>
        api.DELETE('/admin/v1/products/{name}', { params: { path: { name } }, signal }),
      );
    },
  };

  const auditEvents: AuditApi = {
    async list(subdomain, query = {}) {
      if (subdomain === undefined) {
        const { data } = await call(`GET ${ADMIN_API_PREFIX}/audit-events`, safe, (signal) =>
          api.GET('/admin/v1/audit-events', { params: { query }, signal }),
        );
        return data!;
      }
      const { workspace: _workspace, ...workspaceQuery } = query;
      const { data } = await call(`GET ${ws(subdomain)}/audit-events`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}/audit-events', { params: { path: { subdomain }, query: workspaceQuery }, signal }),
      );
      return data!;
    },
    iterate(subdomain, query = {}) {
      return everyEvent(query, (page) => auditEvents.list(subdomain, page));
    },
  };

  const endpointPath = (subdomain: string, id?: string) =>
    `${ws(subdomain)}/webhook-endpoints${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;
  const webhooks: WebhooksApi = {
    async create(subdomain, body) {
      const { data } = await call(`POST ${endpointPath(subdomain)}`, once, (signal) =>
        api.POST('/admin/v1/workspaces/{subdomain}/webhook-endpoints', { params: { path: { subdomain } }, body, signal }),
      );
      return data!;
    },
    async list(subdomain) {
      const { data } = await call(`GET ${endpointPath(subdomain)}`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}/webhook-endpoints', { params: { path: { subdomain } }, signal }),
      );
      return data!.webhook_endpoints;
    },
    async get(subdomain, id) {
      const { data } = await call(`GET ${endpointPath(subdomain, id)}`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}', { params: { path: { subdomain, id } }, signal }),
      );
      return data!;
    },
    async update(subdomain, id, body) {
      const { data } = await call(`PATCH ${endpointPath(subdomain, id)}`, safe, (signal) =>
        api.PATCH('/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}', { params: { path: { subdomain, id } }, body, signal }),
      );
      return data!;
    },
    async delete(subdomain, id) {
      await call(`DELETE ${endpointPath(subdomain, id)}`, once, (signal) =>
        api.DELETE('/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}', { params: { path: { subdomain, id } }, signal }),
      );
    },
    async rotateSecret(subdomain, id) {
      const { data } = await call(`POST ${endpointPath(subdomain, id)}/rotate-secret`, once, (signal) =>
        api.POST('/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/rotate-secret', { params: { path: { subdomain, id } }, signal }),
      );
      return data!;
    },
    async deliveries(subdomain, id, query = {}) {
      const { data } = await call(`GET ${endpointPath(subdomain, id)}/deliveries`, safe, (signal) =>
        api.GET('/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/deliveries', { params: { path: { subdomain, id }, query }, signal }),
      );
      return data!;
    },
    async redeliver(subdomain, id, deliveryId) {
      const path = { subdomain, id, delivery_id: deliveryId };
      const { data } = await call(`POST ${endpointPath(subdomain, id)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, safe, (signal) =>
        api.POST('/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver', { params: { path }, signal }),
      );
      return data!;
    },
  };

  async function rotateSecretsKey(): Promise<SecretsKeyRotation> {
    const { data } = await call(`POST ${ADMIN_API_PREFIX}/secrets-key/rotate`, safe, (signal) => api.POST('/admin/v1/secrets-key/rotate', { signal }));
    return data!;
  }

  return {
    workspaces,
    apiKeys,
    identityProviders,
    products,
    auditEvents,
    auditStreams: auditStreamsApi(transport, ADMIN_API_PREFIX),
    policies,
    webhooks,
    rotateSecretsKey,
    close: () => transport.close(),
  };
}
