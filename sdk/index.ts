/**
 * The wum SDK: typed clients of the workspace API and the operator API, generated from the
 * service's OpenAPI document (sdk/schema.ts) and wrapped with openapi-fetch.
 *
 * - {@link createClient}: one workspace's users, products and events, and its self-service:
 *   API keys, identity provider, webhook endpoints, audit trail and audit streams, policies (`X-Api-Key`).
 * - {@link createAdminClient}: workspaces, API keys, the product catalogue, the audit trail and audit streams
 *   (`Authorization: Bearer <ADMIN_TOKEN>`).
 * - Every failure is a {@link WumApiError}.
 * - Retries: 429 and 503 always (answered before anything is applied), with exponential
 *   backoff and full jitter, never sooner than `Retry-After`, bounded in attempts and time;
 *   network failures and timeouts only for calls that are safe to repeat. `users.add` sends an
 *   `Idempotency-Key` it generates, so its retries cannot add twice; so does `users.update`.
 * - `localhost` and `*.localhost` resolve to loopback (RFC 6761), so
 *   `http://acme.localhost:3000` works without editing `/etc/hosts`.
 *
 * @packageDocumentation
 */
export {
  createClient,
  EXTERNAL_API_PREFIX,
  type AddUserOptions,
  type AppRole,
  type ClientOptions,
  type EventPage,
  type EventsApi,
  type ListEventsQuery,
  type ListUsersQuery,
  type NewUser,
  type Pagination,
  type Product,
  type ProductsApi,
  type StatusFilter,
  type User,
  type UpdateUserOptions,
  type UserAuditEvent,
  type UserChanges,
  type UserHistoryPage,
  type UserHistoryQuery,
  type UserPage,
  type UsersApi,
  type UserWithEtag,
  type WumClient,
  type WumEvent,
} from './client.ts';
export {
  ADMIN_API_PREFIX,
  createAdminClient,
  type Actor,
  type AdminClientOptions,
  type ApiKey,
  type ApiKeyScope,
  type ApiKeysApi,
  type IdentityProvider,
  type IdentityProviderConfig,
  type IdentityProvidersApi,
  type AuditApi,
  type AuditEvent,
  type AuditEventPage,
  type AuditQuery,
  type CatalogueApi,
  type CatalogueProduct,
  type CreatedApiKey,
  type CreatedWorkspace,
  type NewApiKey,
  type NewWebhookEndpoint,
  type PageQuery,
  type SecretsKeyRotation,
  type WebhookDelivery,
  type WebhookDeliveryPage,
  type WebhookEndpoint,
  type WebhookEndpointChanges,
  type WebhookEndpointWithSecret,
  type WebhooksApi,
  type Workspace,
  type WorkspaceExpiryPolicy,
  type WorkspaceInactivityPolicy,
  type WorkspacePage,
  type WorkspacePoliciesApi,
  type WorkspacesApi,
  type WumAdminClient,
} from './admin-client.ts';
export type {
  ActivityReport,
  ActivityResult,
  CreatedOwnApiKey,
  ExpiryPolicy,
  InactivityPolicy,
  NewOwnApiKey,
  NewOwnWebhookEndpoint,
  OwnApiKey,
  OwnApiKeysApi,
  OwnAuditApi,
  OwnAuditEventPage,
  OwnAuditQuery,
  OwnAuditExportQuery,
  OwnAuditEvent,
  OwnIdentityProvider,
  OwnIdentityProviderApi,
  OwnIdentityProviderConfig,
  OwnWebhookDelivery,
  OwnWebhookDeliveryPage,
  OwnWebhookEndpoint,
  OwnWebhookEndpointChanges,
  OwnWebhookEndpointWithSecret,
  OwnWebhooksApi,
  PoliciesApi,
  SelfServiceApis,
} from './self-service.ts';
export type {
  AuditStream,
  AuditStreamChanges,
  AuditStreamDestination,
  AuditStreamReplay,
  AuditStreamsApi,
  AuditStreamTestOutcome,
  AuditStreamWithSecret,
  NewAuditStream,
  NewOperatorAuditStream,
} from './audit-streams.ts';
export { API_KEY_SCOPES, EVERY_SCOPE, type NamedApiKeyScope } from './api-key-scopes.ts';
export { EVENT_TYPES, type EventType } from './events.ts';
export type { CreateImportOptions, ImportBody, ImportJob, ImportJobPage, ImportReportRow, ImportsApi, ListImportsQuery } from './imports.ts';
export { WumApiError, type FieldError, type Problem, type WumApiErrorInit } from './errors.ts';
export { parseRetryAfter, retryDelay, retryPolicy, type RetryEvent, type RetryOptions, type RetryPolicy } from './retry.ts';
export { createLoopbackAwareAgent, isLoopbackName, loopbackAwareLookup, type TransportOptions } from './transport.ts';
export type { components, operations, paths } from './schema.ts';
