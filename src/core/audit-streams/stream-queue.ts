import type { StreamedAuditEvent } from './audit-stream-repository.ts';
import type { AuditStream } from './audit-stream.ts';
import type { AuditIdSample } from './settled-horizon.ts';

/*
 * The port the stream worker runs on (storage/audit-streams.queries.ts implements it). A claim
 * leases a stream to one process for a while (`FOR UPDATE SKIP LOCKED`, then `claimed_until`),
 * so that replicas never send one stream's batches at once; the outcome is recorded only while
 * that claim still holds (the same `claimId`), in the statement that releases it.
 */

/** A stream claimed for one batch, with its encrypted credentials and its failure streak. */
export interface ClaimedStream {
  readonly stream: AuditStream;
  readonly claimId: string;
  /** As stored: `Store.openSecret` decrypts it. */
  readonly credentials: string;
  /** Failed sends in a row before this one (the backoff's index). */
  readonly failures: number;
}

/** The rows of a batch, and how far the read went. */
export interface StreamRows {
  /** The rows to send, in audit id order (those of the stream's workspace and actions). */
  readonly rows: readonly StreamedAuditEvent[];
  /**
   * The audit id the cursor moves to once `rows` are delivered: the last row's, or further
   * when the rows read past it were all of other actions.
   */
  readonly through: number;
}

/** Where the stream worker takes its work from and records what came of it. */
export interface StreamQueue {
  /**
   * The last audit id handed out, read first, then the transactions open at that moment (the
   * settled horizon's input: settled-horizon.ts); `undefined` when no stream is active or
   * failing, so an idle process asks nothing more.
   */
  sampleAuditIds(): Promise<AuditIdSample | undefined>;
  /**
   * Claims up to `max` streams not paused, due, unclaimed (or whose lease ran out) and with
   * audit rows after their cursor up to `settledThrough`, each for `leaseMs`.
   */
  claimDue(max: number, leaseMs: number, settledThrough: number): Promise<ClaimedStream[]>;
  /**
   * Up to `scan` rows after `stream.cursor` and up to `settledThrough` (every row through it
   * final: a gap below it is never filled), in id order, of the stream's workspace (every one
   * for an operator's stream), of every action: stream-batch.ts picks a batch from them.
   */
  readRows(stream: Pick<AuditStream, 'workspaceId' | 'workspace' | 'cursor'>, scan: number, settledThrough: number): Promise<StreamedAuditEvent[]>;
  /**
   * Records a delivered batch (`sent`; else rows skipped as of other actions) and releases the
   * claim in one statement: the cursor moves to `through`, and after a send the stream is
   * `active` again (unless paused meanwhile); due after `nextInMs`. Returns false when the claim
   * no longer held (the stream was changed, rewound or deleted).
   */
  recordDelivered(claim: ClaimedStream, through: number, nextInMs: number, sent: boolean): Promise<boolean>;
  /**
   * Records a failed send and releases the claim: `failing` (unless paused meanwhile), the
   * error, the streak's start kept, due again after `retryInMs`; the cursor stays.
   */
  recordFailed(claim: ClaimedStream, error: string, retryInMs: number): Promise<void>;
  /** Releases a claim without recording anything (nothing to send), due after `nextInMs`. */
  release(claim: ClaimedStream, nextInMs: number): Promise<void>;
  /** Every stream with its lag, for the `/metrics` gauges. */
  lags(): Promise<ReadonlyArray<{ readonly id: string; readonly status: string; readonly rows: number; readonly seconds: number }>>;
}
