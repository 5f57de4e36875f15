import type { operations } from './schema.ts';
import { auditStreamsApi, type AuditStreamsApi } from './audit-streams.ts';
import { everyEvent, untilAnswered, type Transport } from './transport.ts';

type Json<Op extends keyof operations, Status extends keyof operations[Op]['responses']> =
  operations[Op]['responses'][Status] extends { content: { 'application/json': infer Body } } ? Body : never;
type Body<Op extends keyof operations> = operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Query<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;

/** A key of the workspace, without its secret. */
export type OwnApiKey = Json<'listOwnApiKeys', 200>['api_keys'][number];
/** A key just made, with its plaintext `key` (shown only once). */
export type CreatedOwnApiKey = Json<'createOwnApiKey', 201>;
/** What a key is made with on the workspace's API: `scopes` (required), optional `name` and `expires_at`. */
export type NewOwnApiKey = Body<'createOwnApiKey'>;
/** The workspace's identity provider, never its client secret. */
export type OwnIdentityProvider = Json<'getOwnIdentityProvider', 200>;
/** What sets the identity provider: issuer URL, client id, client secret. */
export type OwnIdentityProviderConfig = Body<'setOwnIdentityProvider'>;
/** A webhook endpoint of the workspace, never its secret. */
export type OwnWebhookEndpoint = Json<'getOwnWebhookEndpoint', 200>;
/** An endpoint with its signing `secret`, shown only by create and rotate. */
export type OwnWebhookEndpointWithSecret = Json<'createOwnWebhookEndpoint', 201>;
/** What creating an endpoint takes: `url`, optional `description` and `event_types`. */
export type NewOwnWebhookEndpoint = Body<'createOwnWebhookEndpoint'>;
/** The fields an endpoint update changes: any of `url`, `description`, `event_types`, `enabled`. */
export type OwnWebhookEndpointChanges = Body<'updateOwnWebhookEndpoint'>;
/** One page of an endpoint's deliveries, newest first. */
export type OwnWebhookDeliveryPage = Json<'listOwnWebhookDeliveries', 200>;
/** One delivery with its attempts. */
export type OwnWebhookDelivery = Json<'redeliverOwnWebhook', 202>;
/**
 * Query of the workspace's audit trail: page or cursor (`starting_after`), `action`,
 * `actor_type`, `target_id`, `since`, `until`, `sort` (default `-occurred_at`).
 */
export type OwnAuditQuery = Query<'listOwnAuditEvents'>;
/** Query of the workspace's audit export: `format` (`jsonl` or `csv`) and the filters of {@link OwnAuditQuery}. */
export type OwnAuditExportQuery = Query<'exportOwnAuditEvents'>;
/** One event of the workspace's audit trail. */
export type OwnAuditEvent = OwnAuditEventPage['audit_events'][number];
/** One page of the workspace's audit trail. */
export type OwnAuditEventPage = Json<'listOwnAuditEvents', 200>;
/** The inactivity policy: `deactivate_after`, `applies_to`, `warn_before`. */
export type InactivityPolicy = Json<'getInactivityPolicy', 200>;
/** The warning before expiries: `warn_before` (null: none). */
export type ExpiryPolicy = Json<'getExpiryPolicy', 200>;
/** What `POST /users/activity` takes: `activity`, each an `email` and the instant `at`. */
export type ActivityReport = Body<'reportActivity'>;
/** How many users moved forward or not, and the emails no user has. */
export type ActivityResult = Json<'reportActivity', 200>;

/** The workspace's own API keys (scope `keys:write`). */
export interface OwnApiKeysApi {
  /**
   * Makes a key with `scopes` (required), a name and an expiry when given; its plaintext is in the
   * result only. Not retried after a network failure.
   * @throws WumApiError `insufficient_scope` (403) for a scope the calling key lacks; `validation_failed` (400).
   */
  create(key: NewOwnApiKey): Promise<CreatedOwnApiKey>;
  /** Every key of the workspace, revoked ones included, never the plaintext. */
  list(): Promise<OwnApiKey[]>;
  /**
   * Revokes a key (idempotent).
   * @throws WumApiError `api_key_not_found` (404); `insufficient_scope` (403) for a key holding a scope the caller lacks.
   */
  revoke(id: string): Promise<void>;
}

/** The workspace's identity provider for the console (scope `sso:write`). */
export interface OwnIdentityProviderApi {
  /**
   * Sets (creates or replaces) it, once its discovery answers; ends the sessions opened with the previous one.
   * @throws WumApiError `validation_failed` (400); `identity_provider_unreachable` and the other `identity_provider_*` codes (422).
   */
  set(config: OwnIdentityProviderConfig): Promise<{ provider: OwnIdentityProvider; created: boolean }>;
  /** @throws WumApiError `identity_provider_not_found` (404). */
  get(): Promise<OwnIdentityProvider>;
  /** Tests the stored one's discovery again, changing nothing. @throws WumApiError `identity_provider_*` (404, 422). */
  test(): Promise<OwnIdentityProvider>;
  /** Removes it. @throws WumApiError `identity_provider_not_found` (404). */
  remove(): Promise<void>;
}

/** The workspace's webhook endpoints and their deliveries (scope `webhooks:write`). */
export interface OwnWebhooksApi {
  /** Creates an endpoint; its `secret` is in the result only. Not retried after a network failure. */
  create(endpoint: NewOwnWebhookEndpoint): Promise<OwnWebhookEndpointWithSecret>;
  /** Every endpoint, oldest first. */
  list(): Promise<OwnWebhookEndpoint[]>;
  /** @throws WumApiError `webhook_endpoint_not_found` (404). */
  get(id: string): Promise<OwnWebhookEndpoint>;
  /** Changes the given fields (`enabled: false` disables, `true` re-enables). */
  update(id: string, changes: OwnWebhookEndpointChanges): Promise<OwnWebhookEndpoint>;
  /** Deletes an endpoint and its deliveries. Not retried after a network failure. */
  delete(id: string): Promise<void>;
  /** A new secret (in the result only); the old one still signs for 24 h. Not retried after a network failure. */
  rotateSecret(id: string): Promise<OwnWebhookEndpointWithSecret>;
  /** One page of the endpoint's deliveries, newest first. */
  deliveries(id: string, query?: Query<'listOwnWebhookDeliveries'>): Promise<OwnWebhookDeliveryPage>;
  /** Sends a delivery again. @throws WumApiError `webhook_delivery_not_found` (404); `webhook_endpoint_disabled` (409). */
  redeliver(id: string, deliveryId: string): Promise<OwnWebhookDelivery>;
}

/** The workspace's audit trail (scope `audit:read`). */
export interface OwnAuditApi {
  /** One page of the workspace's audit events, newest first unless `sort: 'occurred_at'`, narrowed by the filters. */
  list(query?: OwnAuditQuery): Promise<OwnAuditEventPage>;
  /**
   * Every event the query selects, in its order, read page by page with the cursor
   * (`next_cursor`), so events written meanwhile neither repeat nor shift it; from past
   * `query.starting_after` when given. Oldest first it also yields the events written while it runs.
   */
  iterate(query?: Omit<OwnAuditQuery, 'page_number'>): AsyncGenerator<OwnAuditEvent, void, undefined>;
  /**
   * The export of the events the query selects, oldest first, as the server streams it (JSON
   * Lines or CSV bytes). The client's timeout covers the wait for the answer, not the body.
   */
  export(query?: OwnAuditExportQuery): Promise<ReadableStream<Uint8Array>>;
}

/** The workspace's access policies (read: `users:read`; change: `policies:write`). */
export interface PoliciesApi {
  /** @throws WumApiError `policy_not_found` (404). */
  getInactivity(): Promise<InactivityPolicy>;
  /** Sets the inactivity policy. @throws WumApiError `invalid_duration` (422). */
  putInactivity(policy: InactivityPolicy): Promise<InactivityPolicy>;
  /** Removes the inactivity policy. @throws WumApiError `policy_not_found` (404). */
  deleteInactivity(): Promise<void>;
  /** The warning before expiries (`warn_before` null when none). */
  getExpiry(): Promise<ExpiryPolicy>;
  /** Sets the warning before expiries. @throws WumApiError `invalid_duration` (422). */
  putExpiry(policy: ExpiryPolicy): Promise<ExpiryPolicy>;
}

/** The self-service parts of a workspace client, and its policies and activity reports. */
export interface SelfServiceApis {
  readonly apiKeys: OwnApiKeysApi;
  readonly identityProvider: OwnIdentityProviderApi;
  readonly webhooks: OwnWebhooksApi;
  readonly auditEvents: OwnAuditApi;
  /** The workspace's audit streams to a SIEM, with their health (scope `audit:write`). */
  readonly auditStreams: AuditStreamsApi;
  readonly policies: PoliciesApi;
  /**
   * Reports when people were last active (scope `activity:write`); idempotent (times only move
   * forward), so retried after a network failure.
   */
  reportActivity(report: ActivityReport): Promise<ActivityResult>;
}

/**
 * The self-service APIs of a workspace client over its `transport` (docs/api.md,
 * "Self-service"): reads and idempotent changes are retried after a network failure, the
 * rest (creating, deleting, rotating) are not.
 */
export function selfServiceApis(transport: Transport, prefix: string): SelfServiceApis {
  const { api, call } = transport;
  const safe = { replayable: true };
  const once = { replayable: false };
  const endpoint = (id: string) => `${prefix}/webhook-endpoints/${encodeURIComponent(id)}`;

  const apiKeys: OwnApiKeysApi = {
    async create(body) {
      const { data } = await call(`POST ${prefix}/api-keys`, once, (signal) => api.POST('/api/external/v2/api-keys', { body, signal }));
      return data!;
    },
    async list() {
      const { data } = await call(`GET ${prefix}/api-keys`, safe, (signal) => api.GET('/api/external/v2/api-keys', { signal }));
      return data!.api_keys;
    },
    async revoke(id) {
      await call(`DELETE ${prefix}/api-keys/${encodeURIComponent(id)}`, safe, (signal) =>
        api.DELETE('/api/external/v2/api-keys/{id}', { params: { path: { id } }, signal }),
      );
    },
  };

  const identityProvider: OwnIdentityProviderApi = {
    async set(body) {
      const { data, response } = await call(`PUT ${prefix}/identity-provider`, safe, (signal) =>
        api.PUT('/api/external/v2/identity-provider', { body, signal }),
      );
      return { provider: data!, created: response.status === 201 };
    },
    async get() {
      const { data } = await call(`GET ${prefix}/identity-provider`, safe, (signal) => api.GET('/api/external/v2/identity-provider', { signal }));
      return data!;
    },
    async test() {
      const { data } = await call(`POST ${prefix}/identity-provider/test`, safe, (signal) =>
        api.POST('/api/external/v2/identity-provider/test', { signal }),
      );
      return data!;
    },
    async remove() {
      await call(`DELETE ${prefix}/identity-provider`, once, (signal) => api.DELETE('/api/external/v2/identity-provider', { signal }));
    },
  };

  const webhooks: OwnWebhooksApi = {
    async create(body) {
      const { data } = await call(`POST ${prefix}/webhook-endpoints`, once, (signal) => api.POST('/api/external/v2/webhook-endpoints', { body, signal }));
      return data!;
    },
    async list() {
      const { data } = await call(`GET ${prefix}/webhook-endpoints`, safe, (signal) => api.GET('/api/external/v2/webhook-endpoints', { signal }));
      return data!.webhook_endpoints;
    },
    async get(id) {
      const { data } = await call(`GET ${endpoint(id)}`, safe, (signal) =>
        api.GET('/api/external/v2/webhook-endpoints/{id}', { params: { path: { id } }, signal }),
      );
      return data!;
    },
    async update(id, body) {
      const { data } = await call(`PATCH ${endpoint(id)}`, safe, (signal) =>
        api.PATCH('/api/external/v2/webhook-endpoints/{id}', { params: { path: { id } }, body, signal }),
      );
      return data!;
    },
    async delete(id) {
      await call(`DELETE ${endpoint(id)}`, once, (signal) => api.DELETE('/api/external/v2/webhook-endpoints/{id}', { params: { path: { id } }, signal }));
    },
    async rotateSecret(id) {
      const { data } = await call(`POST ${endpoint(id)}/rotate-secret`, once, (signal) =>
        api.POST('/api/external/v2/webhook-endpoints/{id}/rotate-secret', { params: { path: { id } }, signal }),
      );
      return data!;
    },
    async deliveries(id, query = {}) {
      const { data } = await call(`GET ${endpoint(id)}/deliveries`, safe, (signal) =>
        api.GET('/api/external/v2/webhook-endpoints/{id}/deliveries', { params: { path: { id }, query }, signal }),
      );
      return data!;
    },
    async redeliver(id, deliveryId) {
      const path = { id, delivery_id: deliveryId };
      const { data } = await call(`POST ${endpoint(id)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`, safe, (signal) =>
        api.POST('/api/external/v2/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver', { params: { path }, signal }),
      );
      return data!;
    },
  };

  const auditEvents: OwnAuditApi = {
    async list(query = {}) {
      const { data } = await call(`GET ${prefix}/audit-events`, safe, (signal) => api.GET('/api/external/v2/audit-events', { params: { query }, signal }));
      return data!;
    },
    iterate(query = {}) {
      return everyEvent(query, (page) => auditEvents.list(page));
    },
    async export(query = {}) {
      const { response } = await call(`GET ${prefix}/audit-events/export`, safe, (timeout) =>
        untilAnswered(timeout, (signal) => api.GET('/api/external/v2/audit-events/export', { params: { query }, parseAs: 'stream', signal })),
      );
      return response.body!;
    },
  };

  const policies: PoliciesApi = {
    async getInactivity() {
      const { data } = await call(`GET ${prefix}/policies/inactivity`, safe, (signal) => api.GET('/api/external/v2/policies/inactivity', { signal }));
      return data!;
    },
    async putInactivity(body) {
      const { data } = await call(`PUT ${prefix}/policies/inactivity`, safe, (signal) =>
        api.PUT('/api/external/v2/policies/inactivity', { body, signal }),
      );
      return data!;
    },
    async deleteInactivity() {
      await call(`DELETE ${prefix}/policies/inactivity`, once, (signal) => api.DELETE('/api/external/v2/policies/inactivity', { signal }));
    },
    async getExpiry() {
      const { data } = await call(`GET ${prefix}/policies/expiry`, safe, (signal) => api.GET('/api/external/v2/policies/expiry', { signal }));
      return data!;
    },
    async putExpiry(body) {
      const { data } = await call(`PUT ${prefix}/policies/expiry`, safe, (signal) => api.PUT('/api/external/v2/policies/expiry', { body, signal }));
      return data!;
    },
  };

  async function reportActivity(body: ActivityReport): Promise<ActivityResult> {
    const { data } = await call(`POST ${prefix}/users/activity`, safe, (signal) => api.POST('/api/external/v2/users/activity', { body, signal }));
    return data!;
  }

  return { apiKeys, identityProvider, webhooks, auditEvents, auditStreams: auditStreamsApi(transport, '/api/external/v2'), policies, reportActivity };
}
