import { randomBytes } from 'node:crypto';

/** A webhook endpoint of a workspace, without its secrets (docs/contract.md Part B, Events and webhooks). */
export interface WebhookEndpoint {
  readonly id: string;
  readonly url: string;
  readonly description: string;
  /** The event types sent to it; null: every type. */
  readonly eventTypes: readonly string[] | null;
  readonly enabled: boolean;
  /** Why it was disabled (`failing` when the worker disabled it), else null. */
  readonly disabledReason: string | null;
  /** Until when the secret replaced by the last rotation still signs; null when none does. */
  readonly previousSecretExpiresAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** What creating an endpoint stores. */
export interface NewWebhookEndpoint {
  readonly url: string;
  readonly description: string;
  readonly eventTypes: readonly string[] | null;
  /** The signing secret in clear; the repository stores it encrypted. */
  readonly secret: string;
}

/** The fields an update may change; absent ones are kept. */
export interface WebhookEndpointChanges {
  readonly url?: string;
  readonly description?: string;
  readonly eventTypes?: readonly string[] | null;
  readonly enabled?: boolean;
}

/** One attempt of a delivery, as recorded in its log. */
export interface DeliveryAttempt {
  /** RFC 3339 time the request was sent. */
  readonly attempted_at: string;
  /** The receiver's HTTP status, or null when no response came (timeout, refused address, network error). */
  readonly response_status: number | null;
  /** Why the attempt failed when no response came (or what the refusal was), else null. */
  readonly error: string | null;
  /** Time from sending to the response (or the failure), in ms. */
  readonly duration_ms: number;
}

/** Status of a delivery: `pending` (to be attempted), `succeeded` (a 2xx), `failed` (retries exhausted). */
export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event to be sent to one endpoint, with its attempts. */
export interface WebhookDelivery {
  readonly id: string;
  readonly endpointId: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly eventSequence: number;
  readonly status: DeliveryStatus;
  /** Attempts since it was created or last redelivered. */
  readonly attempts: number;
  /** When it is next attempted (pending only), else null. */
  readonly nextAttemptAt: Date | null;
  readonly lastAttemptAt: Date | null;
  readonly lastResponseStatus: number | null;
  /** Every attempt, oldest first (redeliveries included). */
  readonly attemptLog: readonly DeliveryAttempt[];
  readonly createdAt: Date;
  readonly deliveredAt: Date | null;
}

/** Longest accepted webhook URL, in characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** The Standard Webhooks prefix of a signing secret. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** How long a rotated-out secret still signs, in ms (docs/api.md, "Events and webhooks"). */
export const PREVIOUS_SECRET_VALIDITY_MS = 24 * 60 * 60 * 1000;

/**
 * A new signing secret: `whsec_` + 32 random bytes in base64, the form the Standard Webhooks
 * libraries (`new Webhook(secret)`) take. Source: Standard Webhooks specification, "Signature scheme".
 */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64');
}
