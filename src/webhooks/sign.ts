import { createHmac } from 'node:crypto';

/** The Standard Webhooks headers of one delivery attempt. */
export interface WebhookHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

/** The prefix of a Standard Webhooks secret; the rest is the key, base64. */
const SECRET_PREFIX = 'whsec_';

/** The HMAC key of a `whsec_<base64>` secret (or of a bare base64 one), as the specification reads it. */
function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/**
 * Signs a delivery the Standard Webhooks way: `webhook-id` (the event id, the same on every
 * attempt), `webhook-timestamp` (seconds since the epoch) and `webhook-signature`, one
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret, space-separated (several while a
 * rotated-out secret still signs; a receiver accepts any). The HMAC is node:crypto's (OpenSSL):
 * the official `standardwebhooks` package computes the same bytes with a SHA-256 written in
 * JavaScript, three to four times the CPU of a delivery's signature, and every test that checks
 * a signature verifies it with that package (docs/performance.md, "Webhooks").
 * Source: docs/contract.md Part B, Events and webhooks; Standard Webhooks specification, "Signature scheme".
 */
export function signDelivery(msgId: string, at: Date, body: string, secrets: readonly string[]): WebhookHeaders {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signed = `${msgId}.${timestamp}.${body}`;
  return {
    'webhook-id': msgId,
    'webhook-timestamp': timestamp,
    'webhook-signature': secrets.map((secret) => `v1,${createHmac('sha256', signingKey(secret)).update(signed).digest('base64')}`).join(' '),
  };
}
