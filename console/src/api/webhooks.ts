/*
 * A workspace's webhook endpoints and their deliveries through the operator API
 * (`/admin/v1/workspaces/{subdomain}/webhook-endpoints`), typed from sdk/schema.ts. Every call
 * throws WumApiError on failure (see `send`).
 */
import type { operations } from '../../../sdk/schema.ts';
import type { Json } from './admin.ts';
import { api, send } from './client.ts';

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

/** The webhook calls the console makes. */
export const webhooksApi = {
  /** Every endpoint of the workspace, oldest first. */
  async list(subdomain: string, signal?: AbortSignal): Promise<WebhookEndpoint[]> {
    return (await send(`GET ${ENDPOINTS}`, (s) => api.GET(ENDPOINTS, { params: { path: { subdomain } }, signal: s }), signal)).data.webhook_endpoints;
  },
  /** One endpoint. @throws `webhook_endpoint_not_found` (404). */
  async get(subdomain: string, id: string, signal?: AbortSignal): Promise<WebhookEndpoint> {
    return (await send(`GET ${ENDPOINT}`, (s) => api.GET(ENDPOINT, { params: { path: { subdomain, id } }, signal: s }), signal)).data;
  },
  /** Creates an endpoint; the answer carries its secret, this once. @throws `validation_failed` (400, field `url`). */
  async create(subdomain: string, body: NewWebhookEndpoint): Promise<WebhookEndpointWithSecret> {
    return (await send(`POST ${ENDPOINTS}`, (s) => api.POST(ENDPOINTS, { params: { path: { subdomain } }, body, signal: s }))).data;
  },
  /** Changes the fields given. @throws `validation_failed` (400), `webhook_endpoint_not_found` (404). */
  async update(subdomain: string, id: string, body: WebhookEndpointChanges): Promise<WebhookEndpoint> {
    return (await send(`PATCH ${ENDPOINT}`, (s) => api.PATCH(ENDPOINT, { params: { path: { subdomain, id } }, body, signal: s }))).data;
  },
  /** Deletes the endpoint and its deliveries. */
  async remove(subdomain: string, id: string): Promise<void> {
    await send(`DELETE ${ENDPOINT}`, (s) => api.DELETE(ENDPOINT, { params: { path: { subdomain, id } }, signal: s }));
  },
  /** Gives the endpoint a new secret, returned this once (the old one keeps signing for 24 hours). */
  async rotateSecret(subdomain: string, id: string): Promise<WebhookEndpointWithSecret> {
    const ROTATE = '/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/rotate-secret';
    return (await send(`POST ${ROTATE}`, (s) => api.POST(ROTATE, { params: { path: { subdomain, id } }, signal: s }))).data;
  },
  /** One page of the endpoint's deliveries, newest first. */
  async listDeliveries(subdomain: string, id: string, query: { page_number: number; page_size: number }, signal?: AbortSignal): Promise<DeliveryPage> {
    const DELIVERIES = '/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/deliveries';
    return (await send(`GET ${DELIVERIES}`, (s) => api.GET(DELIVERIES, { params: { path: { subdomain, id }, query }, signal: s }), signal)).data;
  },
  /** Makes a delivery pending again, due now. @throws `webhook_endpoint_disabled` (409) while the endpoint is disabled. */
  async redeliver(subdomain: string, id: string, deliveryId: string): Promise<WebhookDelivery> {
    const REDELIVER = '/admin/v1/workspaces/{subdomain}/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver';
    return (await send(`POST ${REDELIVER}`, (s) => api.POST(REDELIVER, { params: { path: { subdomain, id, delivery_id: deliveryId } }, signal: s }))).data;
  },
};
