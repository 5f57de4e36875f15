/*
 * A workspace's webhook endpoints and their deliveries, through the operator API
 * (`/admin/v1/workspaces/{subdomain}/webhook-endpoints`) or the owner's workspace API
 * (`/api/external/v2/webhook-endpoints`, see where.ts), typed from sdk/schema.ts. Every call
 * throws WumApiError on failure (see `send`).
 */
import type { operations } from '../../../sdk/schema.ts';
import type { Json } from './admin.ts';
import { api, send } from './client.ts';
import { pathFor, type Where } from './where.ts';

/** A webhook endpoint as listed (never its secret). */
export type WebhookEndpoint = Json<'getWebhookEndpoint', 200>;
/** An endpoint with its signing secret (`whsec_…`): the answer of create and rotate, shown once. */
export type WebhookEndpointWithSecret = Json<'createWebhookEndpoint', 201>;
/** The body of a create. */
export type NewWebhookEndpoint = operations['createWebhookEndpoint']['requestBody']['content']['application/json'];
/** The body of an update: the fields given are changed. */
export type WebhookEndpointChanges = operations['updateWebhookEndpoint']['requestBody']['content']['application/json'];
/** An event type an endpoint can subscribe to. */
export type WebhookEventType = NonNullable<NewWebhookEndpoint['event_types']>[number];
/** One page of an endpoint's deliveries, newest first. */
export type DeliveryPage = Json<'listWebhookDeliveries', 200>;
/** One delivery with its attempts. */
export type WebhookDelivery = DeliveryPage['deliveries'][number];

const ENDPOINTS = '/admin/v1/workspaces/{subdomain}/webhook-endpoints';
const ENDPOINT = '/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}';

/** The webhook calls the console makes, for the operator or the workspace's owner (see where.ts). */
export const webhooksApi = {
  /** Every endpoint of the workspace, oldest first. */
  async list(where: Where, signal?: AbortSignal): Promise<WebhookEndpoint[]> {
    const path = pathFor(where, ENDPOINTS);
    return (await send(`GET ${path}`, (s) => api.GET(path, { params: { path: { subdomain: where.subdomain } }, signal: s }), signal)).data.webhook_endpoints;
  },
  /** One endpoint. @throws `webhook_endpoint_not_found` (404). */
  async get(where: Where, id: string, signal?: AbortSignal): Promise<WebhookEndpoint> {
    const path = pathFor(where, ENDPOINT);
    return (await send(`GET ${path}`, (s) => api.GET(path, { params: { path: { subdomain: where.subdomain, id } }, signal: s }), signal)).data;
  },
  /** Creates an endpoint; the answer carries its secret, this once. @throws `validation_failed` (400, field `url`). */
  async create(where: Where, body: NewWebhookEndpoint): Promise<WebhookEndpointWithSecret> {
    const path = pathFor(where, ENDPOINTS);
    return (await send(`POST ${path}`, (s) => api.POST(path, { params: { path: { subdomain: where.subdomain } }, body, signal: s }))).data;
  },
  /** Changes the fields given. @throws `validation_failed` (400), `webhook_endpoint_not_found` (404). */
  async update(where: Where, id: string, body: WebhookEndpointChanges): Promise<WebhookEndpoint> {
    const path = pathFor(where, ENDPOINT);
    return (await send(`PATCH ${path}`, (s) => api.PATCH(path, { params: { path: { subdomain: where.subdomain, id } }, body, signal: s }))).data;
  },
  /** Deletes the endpoint and its deliveries. */
  async remove(where: Where, id: string): Promise<void> {
    const path = pathFor(where, ENDPOINT);
    await send(`DELETE ${path}`, (s) => api.DELETE(path, { params: { path: { subdomain: where.subdomain, id } }, signal: s }));
  },
  /** Gives the endpoint a new secret, returned this once (the old one keeps signing for 24 hours). */
  async rotateSecret(where: Where, id: string): Promise<WebhookEndpointWithSecret> {
    const path = pathFor(where, '/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/rotate-secret');
    return (await send(`POST ${path}`, (s) => api.POST(path, { params: { path: { subdomain: where.subdomain, id } }, signal: s }))).data;
  },
  /** One page of the endpoint's deliveries, newest first. */
  async listDeliveries(where: Where, id: string, query: { page_number: number; page_size: number }, signal?: AbortSignal): Promise<DeliveryPage> {
    const path = pathFor(where, '/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/deliveries');
    return (await send(`GET ${path}`, (s) => api.GET(path, { params: { path: { subdomain: where.subdomain, id }, query }, signal: s }), signal)).data;
  },
  /** Makes a delivery pending again, due now. @throws `webhook_endpoint_disabled` (409) while the endpoint is disabled. */
  async redeliver(where: Where, id: string, deliveryId: string): Promise<WebhookDelivery> {
    const path = pathFor(where, '/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver');
    const params = { path: { subdomain: where.subdomain, id, delivery_id: deliveryId } };
    return (await send(`POST ${path}`, (s) => api.POST(path, { params, signal: s }))).data;
  },
};
