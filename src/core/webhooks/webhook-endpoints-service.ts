import { SYSTEM_ACTOR, type Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import { paginate, type Page, type PageRequest } from '../pagination.ts';
import type { Repositories, Store } from '../ports.ts';
import type { Workspace } from '../workspaces/workspace-repository.ts';
import { requireWorkspace } from '../workspaces/require-workspace.ts';
import {
  generateWebhookSecret,
  PREVIOUS_SECRET_VALIDITY_MS,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEndpointChanges,
} from './webhook-endpoint.ts';

/**
 * Checks that a URL may receive webhooks (scheme and address rules, docs/contract.md Part B, Events and
 * webhooks); resolves with nothing, rejects with AppError `validation_failed` naming `url`.
 * Injected: the rules need DNS and configuration, which the domain does not hold.
 */
export type WebhookUrlCheck = (url: string) => Promise<void>;

/** An endpoint with the secret that signs for it, shown only when created or rotated. */
export interface EndpointWithSecret {
  readonly endpoint: WebhookEndpoint;
  readonly secret: string;
}

/** The endpoint as the audit trail records it: never a secret. */
function audited(endpoint: WebhookEndpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    event_types: endpoint.eventTypes,
    enabled: endpoint.enabled,
    disabled_reason: endpoint.disabledReason,
  };
}

/** Appends the audit entry of a change of an endpoint of `workspace`. */
export async function auditEndpointChange(
  tx: Repositories,
  workspace: Pick<Workspace, 'id'>,
  actor: Actor,
  action: string,
  before: WebhookEndpoint | null,
  after: WebhookEndpoint | null,
): Promise<void> {
  await tx.audit.append({
    workspaceId: workspace.id,
    actor,
    action,
    targetType: 'webhook_endpoint',
    targetId: (after ?? before)!.id,
    before: before && audited(before),
    after: after && audited(after),
  });
}

/** The endpoint `id` of `workspace`, optionally locked. @throws AppError `webhook_endpoint_not_found` (404). */
async function requireEndpoint(tx: Repositories, workspace: Workspace, id: string, lock = false): Promise<WebhookEndpoint> {
  const endpoint = await tx.webhooks.find(workspace.id, id, { lock });
  if (!endpoint) throw new AppError('webhook_endpoint_not_found', `No webhook endpoint ${id} in workspace "${workspace.subdomain}".`);
  return endpoint;
}

/**
 * Creates a webhook endpoint with a new signing secret, audited.
 * Source: docs/contract.md Part B, Events and webhooks ("shown `secret` `whsec_…` once").
 * @throws AppError `workspace_not_found` (404); `validation_failed` (400) from `checkUrl`.
 */
export async function createWebhookEndpoint(
  store: Store,
  subdomain: string,
  input: { url: string; description?: string; eventTypes?: readonly string[] | null },
  actor: Actor,
  checkUrl: WebhookUrlCheck,
): Promise<EndpointWithSecret> {
  await checkUrl(input.url);
  const secret = generateWebhookSecret();
  return store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    const endpoint = await tx.webhooks.insert(workspace.id, {
      url: input.url,
      description: input.description ?? '',
      eventTypes: input.eventTypes ?? null,
      secret,
    });
    await auditEndpointChange(tx, workspace, actor, 'webhook_endpoint.created', null, endpoint);
    return { endpoint, secret };
  });
}

/** Every endpoint of a workspace, oldest first. @throws AppError `workspace_not_found` (404). */
export async function listWebhookEndpoints(store: Store, subdomain: string): Promise<WebhookEndpoint[]> {
  return store.webhooks.findAll((await requireWorkspace(store, subdomain)).id);
}

/** One endpoint. @throws AppError `workspace_not_found` / `webhook_endpoint_not_found` (404). */
export async function getWebhookEndpoint(store: Store, subdomain: string, id: string): Promise<WebhookEndpoint> {
  return requireEndpoint(store, await requireWorkspace(store, subdomain), id);
}

/**
 * Changes an endpoint's url, description, event types or `enabled` (enabling a disabled
 * endpoint resumes its pending deliveries), audited when anything changed.
 * @throws AppError `workspace_not_found` / `webhook_endpoint_not_found` (404); `validation_failed` (400).
 */
export async function updateWebhookEndpoint(
  store: Store,
  subdomain: string,
  id: string,
  changes: WebhookEndpointChanges,
  actor: Actor,
  checkUrl: WebhookUrlCheck,
): Promise<WebhookEndpoint> {
  if (changes.url !== undefined) await checkUrl(changes.url);
  return store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    const before = await requireEndpoint(tx, workspace, id, true);
    if (Object.keys(changes).length === 0) return before;
    const after = await tx.webhooks.update(workspace.id, id, changes);
    await auditEndpointChange(tx, workspace, actor, 'webhook_endpoint.updated', before, after);
    return after;
  });
}

/**
 * Gives an endpoint a new secret; the old one keeps signing (a second signature) for 24 h, so
 * a receiver can switch without missing a delivery. Audited (without either secret).
 * @throws AppError `workspace_not_found` / `webhook_endpoint_not_found` (404).
 */
export async function rotateWebhookSecret(store: Store, subdomain: string, id: string, actor: Actor): Promise<EndpointWithSecret> {
  const secret = generateWebhookSecret();
  return store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    const before = await requireEndpoint(tx, workspace, id, true);
    const endpoint = await tx.webhooks.rotateSecret(workspace.id, id, secret, new Date(Date.now() + PREVIOUS_SECRET_VALIDITY_MS));
    await auditEndpointChange(tx, workspace, actor, 'webhook_endpoint.secret_rotated', before, endpoint);
    return { endpoint, secret };
  });
}

/**
 * The disabling rule (docs/contract.md Part B, Events and webhooks): when a delivery's retry schedule
 * has run out, its endpoint is disabled unless some delivery to it succeeded since this one
 * began failing (`failingSince`), and that is audited as `webhook_endpoint.disabled` by the
 * system. Returns whether it disabled the endpoint.
 */
export async function disableFailingEndpoint(store: Store, workspaceId: number, id: string, failingSince: Date): Promise<boolean> {
  return store.transaction(async (tx) => {
    const after = await tx.webhooks.disableFailing(workspaceId, id, failingSince);
    if (!after) return false;
    const before = { ...after, enabled: true, disabledReason: null };
    await auditEndpointChange(tx, { id: workspaceId }, SYSTEM_ACTOR, 'webhook_endpoint.disabled', before, after);
    return true;
  });
}

/** Deletes an endpoint and its deliveries, audited. @throws AppError `workspace_not_found` / `webhook_endpoint_not_found` (404). */
export async function deleteWebhookEndpoint(store: Store, subdomain: string, id: string, actor: Actor): Promise<void> {
  await store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    const before = await requireEndpoint(tx, workspace, id, true);
    await tx.webhooks.delete(workspace.id, id);
    await auditEndpointChange(tx, workspace, actor, 'webhook_endpoint.deleted', before, null);
  });
}

/** A page of an endpoint's deliveries, newest first. @throws AppError `workspace_not_found` / `webhook_endpoint_not_found` (404). */
export async function listWebhookDeliveries(
  store: Store,
  subdomain: string,
  id: string,
  page: PageRequest,
): Promise<Page<WebhookDelivery>> {
  const workspace = await requireWorkspace(store, subdomain);
  await requireEndpoint(store, workspace, id);
  const { rows, total } = await store.webhooks.findDeliveries(workspace.id, id, page);
  return { items: rows, pagination: paginate(page, total) };
}

/**
 * Sends a delivery again (same event, same `webhook-id`), due now with a fresh retry schedule.
 * @throws AppError `workspace_not_found` / `webhook_endpoint_not_found` / `webhook_delivery_not_found` (404);
 *   `webhook_endpoint_disabled` (409) while the endpoint is disabled.
 */
export async function redeliverWebhook(
  store: Store,
  subdomain: string,
  id: string,
  deliveryId: string,
  actor: Actor,
): Promise<WebhookDelivery> {
  return store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    const endpoint = await requireEndpoint(tx, workspace, id);
    if (!endpoint.enabled) {
      throw new AppError('webhook_endpoint_disabled', `Webhook endpoint ${id} is disabled; enable it first.`);
    }
    const delivery = await tx.webhooks.redeliver(workspace.id, id, deliveryId);
    if (!delivery) throw new AppError('webhook_delivery_not_found', `No delivery ${deliveryId} of webhook endpoint ${id}.`);
    await tx.audit.append({
      workspaceId: workspace.id,
      actor,
      action: 'webhook_delivery.redelivered',
      targetType: 'webhook_delivery',
      targetId: delivery.id,
      before: null,
      after: { endpoint_id: id, event_id: delivery.eventId },
    });
    return delivery;
  });
}
