import type { HttpsDestination } from '../core/audit-streams/destination.ts';
import { signDelivery } from '../webhooks/sign.ts';
import { answerError, postBatch } from './post-batch.ts';
import { StreamSendError, type SendBatch, type StreamBatch } from './send-batch.ts';

/**
 * The `webhook-id` of a batch: the stream and its first and last audit id, so every attempt of
 * the same batch carries the same id and a receiver can drop a repeat (Standard Webhooks,
 * "webhook-id").
 */
export function batchId(batch: Pick<StreamBatch, 'streamId' | 'firstAuditId' | 'lastAuditId'>): string {
  return `ast_${batch.streamId}_${batch.firstAuditId}_${batch.lastAuditId}`;
}

/**
 * Sends a batch to an `https` destination (docs/api.md, "Audit streams"): one POST of JSON Lines
 * (`application/x-ndjson`, one row per line), signed like a webhook delivery (Standard Webhooks:
 * `webhook-id` from {@link batchId}, `webhook-timestamp`, `webhook-signature` with the stream's
 * secret). Any 2xx accepts the whole batch.
 * @throws StreamSendError for any other answer, or none.
 */
export const sendHttpsBatch: SendBatch<HttpsDestination> = async (destination, batch, options) => {
  if (!destination.secret) throw new StreamSendError('the stream has no signing secret');
  const body = `${batch.lines.join('\n')}\n`;
  const headers = { 'content-type': 'application/x-ndjson', ...signDelivery(batchId(batch), new Date(), body, [destination.secret]) };
  const answer = await postBatch(destination.url, headers, body, options);
  if (answer.status < 200 || answer.status > 299) throw answerError(answer);
};
