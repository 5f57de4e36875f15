import type { StreamDestination } from '../core/audit-streams/destination.ts';
import { sendHttpsBatch } from './https-sender.ts';
import { StreamSendError, type SendBatch } from './send-batch.ts';
import { sendSplunkHecBatch } from './splunk-hec-sender.ts';

/** The sender of each destination type. */
export type Senders = { readonly [T in StreamDestination['type']]: SendBatch<Extract<StreamDestination, { type: T }>> };

/** A destination type this build cannot send to yet: every batch fails, saying so, and is kept. */
const notAvailable: SendBatch<StreamDestination> = async (destination) => {
  throw new StreamSendError(`destination type ${destination.type} not available on this server`);
};

/** The senders by destination type (docs/api.md, "Audit streams"). */
export const senders: Senders = {
  https: sendHttpsBatch,
  splunk_hec: sendSplunkHecBatch,
  s3: notAvailable,
  syslog: notAvailable,
};

/** Sends `batch` with the sender of `destination`'s type. */
export function sendBatch(destination: StreamDestination, ...rest: Parameters<SendBatch<StreamDestination>> extends [unknown, ...infer R] ? R : never): Promise<void> {
  return (senders[destination.type] as SendBatch<StreamDestination>)(destination, ...rest);
}
