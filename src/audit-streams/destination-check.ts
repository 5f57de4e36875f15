import type { StreamDestinationCheck } from '../core/audit-streams/audit-streams-service.ts';
import type { PublicDestination } from '../core/audit-streams/audit-stream.ts';
import { AppError } from '../core/errors.ts';
import { assertOutboundUrlAllowed, OutboundRefusedError, type OutboundPolicy } from '../outbound/outbound-guard.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../webhooks/url-guard.ts';

/** The address of a destination as a URL the outbound guard checks, and the field it came from. */
function addressOf(destination: PublicDestination): { url: string; field: string } | undefined {
  switch (destination.type) {
    case 'https':
    case 'splunk_hec':
      return { url: destination.url, field: 'destination.url' };
    case 's3':
      // Without an endpoint the bucket is AWS's own, a public address; the sender checks it when it connects.
      return destination.endpoint === undefined ? undefined : { url: destination.endpoint, field: 'destination.endpoint' };
    case 'syslog': {
      const host = destination.host.includes(':') && !destination.host.startsWith('[') ? `[${destination.host}]` : destination.host;
      // Syslog over TLS is no URL: checked as the https address it connects to.
      return { url: `https://${host}:${destination.port}/`, field: 'destination.host' };
    }
  }
}

/**
 * The destination check of the audit-stream routes (docs/security.md, "Outbound connections"):
 * the address's form (`https://`, or `http://` to loopback under `WEBHOOK_ALLOW_HTTP`) and every
 * address its host resolves to now, by the same outbound guard as webhooks; each connection
 * checks again. Refusals are AppError `validation_failed` naming the field.
 */
export function streamDestinationCheck(policy: OutboundPolicy): StreamDestinationCheck {
  return async (destination) => {
    const address = addressOf(destination);
    if (!address) return;
    try {
      if (address.url.length > MAX_WEBHOOK_URL_LENGTH) throw new OutboundRefusedError('url', `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`);
      await assertOutboundUrlAllowed(address.url, policy);
    } catch (error) {
      if (error instanceof OutboundRefusedError) {
        throw new AppError('validation_failed', `The destination is not allowed: ${error.message}.`, [{ field: address.field, message: error.message }]);
      }
      throw error;
    }
  };
}
