import type { StreamDestination } from '../core/audit-streams/destination.ts';
import { sendS3Batch } from './destinations/s3.ts';
import { sendSyslogBatch } from './destinations/syslog.ts';
import { sendHttpsBatch } from './https-sender.ts';
import type { SendBatch } from './send-batch.ts';
import { sendSplunkHecBatch } from './splunk-hec-sender.ts';

/** The sender of each destination type. */
export type Senders = { readonly [T in StreamDestination['type']]: SendBatch<Extract<StreamDestination, { type: T }>> };

/** The senders by destination type (docs/api.md, "Audit streams"). */
export const senders: Senders = {
  https: sendHttpsBatch,
  splunk_hec: sendSplunkHecBatch,
  s3: sendS3Batch,
  syslog: sendSyslogBatch,
};

/** Sends `batch` with the sender of `destination`'s type. */
export function sendBatch(destination: StreamDestination, ...rest: Parameters<SendBatch<StreamDestination>> extends [unknown, ...infer R] ? R : never): Promise<void> {
  return (senders[destination.type] as SendBatch<StreamDestination>)(destination, ...rest);
}
