import { Webhook } from 'standardwebhooks';

/** The Standard Webhooks headers of one delivery attempt. */
export interface WebhookHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

/**
 * Signs a delivery with the official `standardwebhooks` package: `webhook-id` (the event id,
 * the same on every attempt), `webhook-timestamp` (seconds since the epoch) and
 * `webhook-signature`, one `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret,
 * space-separated (several while a rotated-out secret still signs; a receiver accepts any).
 * Source: docs/contract.md Part B, Events and webhooks; Standard Webhooks specification.
 */
export function signDelivery(msgId: string, at: Date, body: string, secrets: readonly string[]): WebhookHeaders {
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(msgId, at, body)).join(' '),
  };
}
