import type { WorkspaceEvent } from '../events/event.ts';
import type { DeliveryAttempt } from './webhook-endpoint.ts';

/*
 * The ports the webhook delivery worker runs on (implemented in storage/deliveries.queries.ts;
 * wired by the composition root). A claim leases due deliveries so that the workers of several
 * processes never send the same one; an outcome is recorded only while the delivery is still as
 * claimed.
 */

/** A delivery claimed for one attempt, with what the attempt needs. */
export interface ClaimedDelivery {
  readonly workspaceId: number;
  readonly id: string;
  readonly endpointId: string;
  readonly url: string;
  /**
   * The secrets that sign it, encrypted as stored (`Store.openSecret` decrypts them): the
   * current one, and the previous one while it is still valid.
   */
  readonly secrets: readonly string[];
  /** Attempts made before this one (the retry schedule's index). */
  readonly attempts: number;
  readonly event: WorkspaceEvent;
}

/** Options of {@link DeliveryQueue.claimDue}. */
export interface ClaimOptions {
  /** Deliveries this process is sending now, by endpoint id: they count against `perEndpoint`. */
  readonly inFlight: ReadonlyMap<string, number>;
  /** Most endpoints to claim for. */
  readonly maxEndpoints: number;
  /** Most deliveries in flight per endpoint (its concurrency in this process). */
  readonly perEndpoint: number;
  /** How long the claim holds, in ms: longer than an attempt may take. */
  readonly leaseMs: number;
}

/** What a failed attempt came to (successes: {@link DeliveryQueue.recordSuccesses}). */
export type AttemptOutcome =
  /** Failed; retried after `retryInMs`. */
  | { readonly kind: 'retry'; readonly attempt: DeliveryAttempt; readonly retryInMs: number }
  /** Failed, and the retry schedule is used up. */
  | { readonly kind: 'failed'; readonly attempt: DeliveryAttempt };

/** Whether {@link DeliveryQueue.recordAttempt} recorded the outcome, and the delivery's failing streak's start. */
export type RecordedAttempt = { readonly recorded: false } | { readonly recorded: true; readonly failingSince: Date };

/** One successful attempt of a claimed delivery, for {@link DeliveryQueue.recordSuccesses}. */
export interface DeliverySuccess {
  readonly delivery: ClaimedDelivery;
  readonly attempt: DeliveryAttempt;
}

/** The queue of webhook deliveries the worker takes its work from. */
export interface DeliveryQueue {
  /**
   * Claims due pending deliveries of enabled endpoints, oldest due first, each leased for
   * `leaseMs`: for each of up to `maxEndpoints` endpoints, as many as `perEndpoint` less those
   * of it already in flight here.
   */
  claimDue(options: ClaimOptions): Promise<ClaimedDelivery[]>;
  /**
   * Records a failed attempt: `recorded: false` when the delivery was no longer as claimed
   * (another process's attempt, or a redelivery, came first); else the start of its failing
   * streak (the disabling rule).
   */
  recordAttempt(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<RecordedAttempt>;
  /**
   * Records many successful attempts at once (each only while its delivery is still as
   * claimed); resolves with the ids of the deliveries recorded.
   */
  recordSuccesses(successes: readonly DeliverySuccess[]): Promise<Set<string>>;
  /** Deliveries waiting to be sent (pending, of any endpoint). */
  countPending(): Promise<number>;
  /**
   * Makes deliveries due now that were written leased to this process ({@link DeliveryHandOff})
   * but that it will not send, each only while it is still as written (pending, no attempt yet),
   * so that any worker's next claim takes them instead of waiting for their lease to pass.
   */
  releaseLeases(deliveries: readonly ClaimedDelivery[]): Promise<void>;
}

/**
 * A process's delivery worker, as the writers of that process see it: the deliveries of a
 * change are written already leased to it for {@link leaseMs} (the lease a claim would set) and
 * handed over once the change has committed, so it sends them without claiming them first. A
 * process that dies before sending leaves them to any worker's claim once the lease has passed,
 * as it would a claimed delivery (docs/contract.md Part B, Events and webhooks).
 */
export interface DeliveryHandOff {
  /** The lease, in ms, for the deliveries written now; 0 when this worker takes none (they are written due). */
  leaseMs(): number;
  /** Takes the deliveries of a committed change, written with a lease of {@link leaseMs}, to send them. */
  take(deliveries: readonly ClaimedDelivery[]): void;
}

/**
 * Told after this process committed a change that may have made webhook deliveries due (a
 * user change, whose outbox event has a delivery per interested endpoint; a redelivery), so
 * that a delivery worker looks for them at once instead of at its next poll. Returns at once
 * and never throws: it only signals (the worker, or other processes, do the work).
 */
export type DeliveriesDue = () => void;
