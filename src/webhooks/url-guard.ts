import { AppError } from '../core/errors.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../core/webhooks/webhook-endpoint.ts';
import { assertOutboundUrlAllowed, OutboundRefusedError, parseOutboundUrl, type OutboundPolicy } from '../outbound/outbound-guard.ts';

/*
 * The outbound guard (outbound/outbound-guard.ts) as webhook URLs meet it (docs/contract.md
 * Part B, Events and webhooks; docs/security.md, "Outbound connections"): checked when an
 * endpoint is created or changed, and again by the sender: a URL's form and literal address before
 * its first delivery, a name at each connection, after DNS.
 */

/** The rules a webhook URL follows: the outbound policy of the configuration. */
export type UrlPolicy = OutboundPolicy;

export { MAX_WEBHOOK_URL_LENGTH } from '../core/webhooks/webhook-endpoint.ts';

/**
 * Parses and checks a webhook URL's form: absolute `https:` (or `http:` when allowed), no
 * credentials, at most {@link MAX_WEBHOOK_URL_LENGTH} characters.
 * @throws OutboundRefusedError saying what is wrong.
 */
export function parseWebhookUrl(raw: string, policy: UrlPolicy): URL {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw new OutboundRefusedError('url', `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
  return parseOutboundUrl(raw, policy);
}

/**
 * The `WebhookUrlCheck` of the admin API: the URL's form and every address its host resolves
 * to now (a name that does not resolve is accepted: each delivery checks again), with
 * refusals as AppError `validation_failed` on field `url`.
 */
export function webhookUrlCheck(policy: UrlPolicy): (url: string) => Promise<void> {
  return async (url) => {
    try {
      parseWebhookUrl(url, policy);
      await assertOutboundUrlAllowed(url, policy);
    } catch (error) {
      if (error instanceof OutboundRefusedError) {
        throw new AppError('validation_failed', `The webhook URL is not allowed: ${error.message}.`, [{ field: 'url', message: error.message }]);
      }
      throw error;
    }
  };
}
