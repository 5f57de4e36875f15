import type { OutboundPolicy } from '../outbound/outbound-guard.ts';

/**
 * One batch of an audit stream, ready to send: its rows already written in the stream's
 * format, and where the batch sits in the workspace's audit trail (docs/api.md, "Audit streams").
 */
export interface StreamBatch {
  /** The stream's id. */
  readonly streamId: string;
  /** Each audit row in the stream's format (`json` or `ocsf`): one JSON text per row, no newline, oldest first. */
  readonly lines: readonly string[];
  /** The first and last audit id of the batch (ids grow with time). */
  readonly firstAuditId: number;
  readonly lastAuditId: number;
  /**
   * When each row happened, one per line and in their order: what a receiver files it under
   * (HEC's `time`, syslog's TIMESTAMP); the first names the S3 object.
   */
  readonly occurredAt: readonly Date[];
}

/** The limits every send runs under: the outbound guard's policy and a deadline. */
export interface SendOptions {
  /** The outbound guard (docs/security.md, "Outbound requests"): checked on the very address connected to. */
  readonly policy: OutboundPolicy;
  /** Milliseconds the whole send may take before it fails. */
  readonly timeoutMs: number;
}

/**
 * Sends one batch to one destination, resolving only when the destination has accepted all
 * of it (at least once: a batch that fails is sent again whole, so a receiver de-duplicates by
 * audit id). Rejects with a {@link StreamSendError} whose message becomes the stream's
 * `last_error`.
 */
export type SendBatch<Destination> = (destination: Destination, batch: StreamBatch, options: SendOptions) => Promise<void>;

/** A failed send: the message says what the destination answered, for the stream's `last_error`. */
export class StreamSendError extends Error {
  override readonly name = 'StreamSendError';
}
