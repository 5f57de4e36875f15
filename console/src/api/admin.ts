/*
 * The operator API (`/admin/v1`) as the console uses it, typed from sdk/schema.ts; a
 * workspace's keys and identity provider also through the workspace API for its owners (see
 * where.ts). Every call throws WumApiError on failure (see `send`).
 */
import type { operations } from '../../../sdk/schema.ts';
import { WumApiError } from '../../../sdk/errors.ts';
import { api, send } from './client.ts';
import { pathFor, type Where } from './where.ts';

/** The JSON body an operation answers with `Status`, from the generated types. */
export type Json<Op extends keyof operations, Status extends number> = operations[Op]['responses'] extends Record<Status, { content: { 'application/json': infer T } }>
  ? T
  : never;

/** One page of workspaces. */
export type WorkspacePage = Json<'listWorkspaces', 200>;
/** A workspace. */
export type Workspace = WorkspacePage['workspaces'][number];
/** A new workspace with its first API key (the plaintext, shown once). */
export type CreatedWorkspace = Json<'createWorkspace', 201>;
/** A new API key with its plaintext (shown once). */
export type CreatedApiKey = Json<'createApiKey', 201>;
/** An API key as listed (never the plaintext). */
export type ApiKey = Json<'listApiKeys', 200>['api_keys'][number];
/** What a new key is made with: name, scopes, expiry (all optional). */
export type NewApiKey = NonNullable<operations['createApiKey']['requestBody']>['content']['application/json'];
/** A product of the catalogue with its roles and times. */
export type CatalogueProduct = Json<'listCatalogueProducts', 200>['products'][number];
/** A workspace's identity provider as shown (never its secret). */
export type IdentityProvider = Json<'getIdentityProvider', 200>;
/** What sets a workspace's identity provider. */
export type IdentityProviderConfig = NonNullable<operations['setIdentityProvider']['requestBody']>['content']['application/json'];
/** One page of audit events. */
export type AuditPage = Json<'listAuditEvents', 200>;
/** One audit event. */
export type AuditEvent = AuditPage['audit_events'][number];
/** Filters, order and page of the audit log (`workspace` narrows the global list to one workspace). */
export type AuditQuery = NonNullable<operations['listAuditEvents']['parameters']['query']>;
/** The audit listings' order: oldest first (`occurred_at`) or newest first (`-occurred_at`). */
export type AuditSort = NonNullable<AuditQuery['sort']>;
/** Filters, order and page of one workspace's audit trail (no `workspace`). */
export type WorkspaceAuditQuery = Omit<AuditQuery, 'workspace'>;
/** The kinds of actor the audit trail records (the API's `actor_type` values). */
export type ActorType = NonNullable<AuditQuery['actor_type']>;

const WORKSPACES = '/admin/v1/workspaces';
const WORKSPACE = '/admin/v1/workspaces/{subdomain}';
const KEYS = '/admin/v1/workspaces/{subdomain}/api-keys';
const IDP = '/admin/v1/workspaces/{subdomain}/identity-provider';
const PRODUCT = '/admin/v1/products/{name}';

/** The operator API's calls the console makes. */
export const adminApi = {
  /** One page of workspaces, oldest first. */
  async listWorkspaces(query: { page_number: number; page_size: number }, signal?: AbortSignal): Promise<WorkspacePage> {
    return (await send(`GET ${WORKSPACES}`, (s) => api.GET(WORKSPACES, { params: { query }, signal: s }), signal)).data;
  },
  /** Creates a workspace and its first key. @throws `workspace_exists` (409), `validation_failed` (400). */
  async createWorkspace(body: { subdomain: string; name?: string }): Promise<CreatedWorkspace> {
    return (await send(`POST ${WORKSPACES}`, (s) => api.POST(WORKSPACES, { body, signal: s }))).data;
  },
  /** Deletes a workspace with all its users, keys and audit trail. */
  async deleteWorkspace(subdomain: string): Promise<void> {
    await send(`DELETE ${WORKSPACE}`, (s) => api.DELETE(WORKSPACE, { params: { path: { subdomain } }, signal: s }));
  },
  /** A workspace's identity provider, or null when it has none. */
  async getIdentityProvider(where: Where, signal?: AbortSignal): Promise<IdentityProvider | null> {
    const path = pathFor(where, IDP);
    try {
      return (await send(`GET ${path}`, (s) => api.GET(path, { params: { path: { subdomain: where.subdomain } }, signal: s }), signal)).data;
    } catch (error) {
      if (error instanceof WumApiError && error.code === 'identity_provider_not_found') return null;
      throw error;
    }
  },
  /** Sets or replaces it. @throws `validation_failed` (400), `identity_provider_*` (422) when the server could not use it. */
  async setIdentityProvider(where: Where, body: IdentityProviderConfig): Promise<void> {
    const path = pathFor(where, IDP);
    await send(`PUT ${path}`, (s) => api.PUT(path, { params: { path: { subdomain: where.subdomain } }, body, signal: s }));
  },
  /** Removes it (its people's sessions end). */
  async removeIdentityProvider(where: Where): Promise<void> {
    const path = pathFor(where, IDP);
    await send(`DELETE ${path}`, (s) => api.DELETE(path, { params: { path: { subdomain: where.subdomain } }, signal: s }));
  },
  /** A workspace's keys, revoked ones included. */
  async listApiKeys(where: Where, signal?: AbortSignal): Promise<ApiKey[]> {
    const path = pathFor(where, KEYS);
    return (await send(`GET ${path}`, (s) => api.GET(path, { params: { path: { subdomain: where.subdomain } }, signal: s }), signal)).data.api_keys;
  },
  /**
   * Adds a key to a workspace, with a name, scopes and an expiry.
   * @throws `validation_failed` (400); `insufficient_scope` (403) when an owner's session asks for a scope it lacks.
   */
  async createApiKey(where: Where, body: NewApiKey = {}): Promise<CreatedApiKey> {
    const path = pathFor(where, KEYS);
    return (await send(`POST ${path}`, (s) => api.POST(path, { params: { path: { subdomain: where.subdomain } }, body, signal: s }))).data;
  },
  /** Revokes a key at once. */
  async revokeApiKey(where: Where, id: string): Promise<void> {
    const path = pathFor(where, '/admin/v1/workspaces/{subdomain}/api-keys/{id}');
    await send(`DELETE ${path}`, (s) => api.DELETE(path, { params: { path: { subdomain: where.subdomain, id } }, signal: s }));
  },
  /** The whole catalogue, sorted by name. */
  async listProducts(signal?: AbortSignal): Promise<CatalogueProduct[]> {
    const PRODUCTS = '/admin/v1/products';
    return (await send(`GET ${PRODUCTS}`, (s) => api.GET(PRODUCTS, { signal: s }), signal)).data.products;
  },
  /** Creates a product or replaces its roles. @throws `product_in_use` (409) when dropping a held role. */
  async putProduct(name: string, roles: string[]): Promise<void> {
    await send(`PUT ${PRODUCT}`, (s) => api.PUT(PRODUCT, { params: { path: { name } }, body: { roles }, signal: s }));
  },
  /** Removes a product. @throws `product_in_use` (409) while an active user holds it. */
  async deleteProduct(name: string): Promise<void> {
    await send(`DELETE ${PRODUCT}`, (s) => api.DELETE(PRODUCT, { params: { path: { name } }, signal: s }));
  },
  /** One page of the audit log of every workspace, narrowed by the filters. */
  async listAuditEvents(query: AuditQuery, signal?: AbortSignal): Promise<AuditPage> {
    const AUDIT = '/admin/v1/audit-events';
    return (await send(`GET ${AUDIT}`, (s) => api.GET(AUDIT, { params: { query }, signal: s }), signal)).data;
  },
  /** One page of one workspace's audit trail (the operator's, or the owner's own with `audit:read`). */
  async listWorkspaceAuditEvents(where: Where, query: WorkspaceAuditQuery, signal?: AbortSignal): Promise<AuditPage> {
    const path = pathFor(where, '/admin/v1/workspaces/{subdomain}/audit-events');
    return (await send(`GET ${path}`, (s) => api.GET(path, { params: { path: { subdomain: where.subdomain }, query }, signal: s }), signal)).data;
  },
};
