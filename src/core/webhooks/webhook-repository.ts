import type { PageRequest, Slice } from '../pagination.ts';
import type { NewWebhookEndpoint, WebhookDelivery, WebhookEndpoint, WebhookEndpointChanges } from './webhook-endpoint.ts';

/*
 * Webhook endpoints as the domain stores them: the port (storage/webhooks.queries.ts); the endpoint
 * and its deliveries are in webhook-endpoint.ts, the worker's queue in delivery-queue.ts.
 */

/** Webhook endpoints of workspaces and their deliveries. Every method takes the workspace id first. */
export interface WebhookRepository {
  insert(workspaceId: number, endpoint: NewWebhookEndpoint): Promise<WebhookEndpoint>;
  /** Every endpoint of the workspace, oldest first. */
  findAll(workspaceId: number): Promise<WebhookEndpoint[]>;
  /** One endpoint (undefined when unknown or not a UUID); `lock` holds its row until commit. */
  find(workspaceId: number, id: string, options?: { lock?: boolean }): Promise<WebhookEndpoint | undefined>;
  /** Applies `changes` (enabling clears the disabled reason) and returns the endpoint after. */
  update(workspaceId: number, id: string, changes: WebhookEndpointChanges): Promise<WebhookEndpoint>;
  /** Replaces the secret (given in clear, stored encrypted); the old one keeps signing until `previousExpiresAt`. */
  rotateSecret(workspaceId: number, id: string, secret: string, previousExpiresAt: Date): Promise<WebhookEndpoint>;
  /**
   * Disables an enabled endpoint (reason `failing`) unless a delivery to it succeeded at or
   * after `failingSince`; the endpoint after, or undefined when it was left as it was.
   */
  disableFailing(workspaceId: number, id: string, failingSince: Date): Promise<WebhookEndpoint | undefined>;
  /** Deletes an endpoint with its deliveries. */
  delete(workspaceId: number, id: string): Promise<void>;
  /** A page of an endpoint's deliveries, newest first, with their total. */
  findDeliveries(workspaceId: number, endpointId: string, page: PageRequest): Promise<Slice<WebhookDelivery>>;
  /**
   * Makes a delivery pending again, due now, with a fresh retry schedule (its attempt log is
   * kept); undefined when the endpoint has no such delivery.
   */
  redeliver(workspaceId: number, endpointId: string, deliveryId: string): Promise<WebhookDelivery | undefined>;
}
