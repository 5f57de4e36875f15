/*
 * The operator API (`/admin/v1`) as the console uses it, typed from sdk/schema.ts. Every call
 * throws WumApiError on failure (see `send`).
 */
import type { operations } from '../../../sdk/schema.ts';
import { WumApiError } from '../../../sdk/errors.ts';
import { api, send } from './client.ts';

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
/** Filters and page of the audit log (`workspace` narrows the global list to one workspace). */
export type AuditQuery = NonNullable<operations['listAuditEvents']['parameters']['query']>;

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
  async getIdentityProvider(subdomain: string, signal?: AbortSignal): Promise<IdentityProvider | null> {
    try {
      return (await send(`GET ${IDP}`, (s) => api.GET(IDP, { params: { path: { subdomain } }, signal: s }), signal)).data;
    } catch (error) {
      if (error instanceof WumApiError && error.code === 'identity_provider_not_found') return null;
      throw error;
    }
  },
  /** Sets or replaces it. @throws `validation_failed` (400). */
  async setIdentityProvider(subdomain: string, body: IdentityProviderConfig): Promise<void> {
    await send(`PUT ${IDP}`, (s) => api.PUT(IDP, { params: { path: { subdomain } }, body, signal: s }));
  },
  /** Removes it (its people's sessions end). */
  async removeIdentityProvider(subdomain: string): Promise<void> {
    await send(`DELETE ${IDP}`, (s) => api.DELETE(IDP, { params: { path: { subdomain } }, signal: s }));
  },
  /** A workspace's keys, revoked ones included. */
  async listApiKeys(subdomain: string, signal?: AbortSignal): Promise<ApiKey[]> {
    return (await send(`GET ${KEYS}`, (s) => api.GET(KEYS, { params: { path: { subdomain } }, signal: s }), signal)).data.api_keys;
  },
  /** Adds a key to a workspace, with a name, scopes and an expiry. @throws `validation_failed` (400). */
  async createApiKey(subdomain: string, body: NewApiKey = {}): Promise<CreatedApiKey> {
    return (await send(`POST ${KEYS}`, (s) => api.POST(KEYS, { params: { path: { subdomain } }, body, signal: s }))).data;
  },
  /** Revokes a key at once. */
  async revokeApiKey(subdomain: string, id: string): Promise<void> {
    const KEY = '/admin/v1/workspaces/{subdomain}/api-keys/{id}';
    await send(`DELETE ${KEY}`, (s) => api.DELETE(KEY, { params: { path: { subdomain, id } }, signal: s }));
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
  /** One page of the audit log, narrowed by the filters. */
  async listAuditEvents(query: AuditQuery, signal?: AbortSignal): Promise<AuditPage> {
    const AUDIT = '/admin/v1/audit-events';
    return (await send(`GET ${AUDIT}`, (s) => api.GET(AUDIT, { params: { query }, signal: s }), signal)).data;
  },
};
