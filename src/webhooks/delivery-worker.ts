import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { WebhookConfig } from '../config/load-config.ts';
import { boundedLru } from '../core/bounded-lru.ts';
import { toEventJson } from '../core/events/event.ts';
import type { Store } from '../core/ports.ts';
import type { DeliveryAttempt } from '../core/webhooks/webhook-endpoint.ts';
import { disableFailingEndpoint } from '../core/webhooks/webhook-endpoints-service.ts';
import type { Logger } from '../core/logger.ts';
import type { AttemptOutcome, ClaimedDelivery, DeliveryHandOff, DeliveryQueue, DeliverySuccess } from '../core/webhooks/delivery-queue.ts';
import { retryDelayMs } from './retry-schedule.ts';
import { createWebhookSender, type SendResult, type WebhookSender } from './send.ts';
import { signDelivery } from './sign.ts';
import { successBatches } from './success-batches.ts';

/** Options of {@link startDeliveryWorker}. */
export interface DeliveryWorkerOptions {
  /** Where due deliveries are claimed and attempts recorded. */
  readonly queue: DeliveryQueue;
  /** The same database as a domain store (the disabling rule runs through the core). */
  readonly store: Store;
  readonly config: WebhookConfig;
  readonly log: Logger;
  /** Where the worker's metrics go (the `/metrics` registry). */
  readonly registry: Registry;
}

/**
 * A running delivery worker; as a {@link DeliveryHandOff}, it takes the deliveries of this
 * process's writes without claiming them while it has room for them.
 */
export interface DeliveryWorker extends DeliveryHandOff {
  /** Looks for due deliveries now rather than at the next poll (e.g. after this process wrote events). */
  wake(): void;
  /** Stops claiming, waits for the attempts in flight (each ends within the timeout), closes connections. */
  stop(): Promise<void>;
}

/** Most endpoints one claim serves. */
const MAX_ENDPOINTS = 64;
/** Most deliveries one process sends at once, over all endpoints. */
const MAX_IN_FLIGHT = 256;
/** How much longer than an attempt's timeout a claim holds, in ms (recording the outcome takes a moment too). */
const LEASE_MARGIN_MS = 5000;
/** Most handed-over deliveries waiting for a slot, over all endpoints. */
const MAX_WAITING = 1024;
/** How many rounds of an endpoint's slots may wait for them. */
const WAITING_ROUNDS = 4;
/**
 * Longest a handed-over delivery may wait for a slot, in ms: less than its lease's margin over
 * the attempt's timeout, so that its lease cannot pass while it is being sent. One that waited
 * longer is given back for a claim.
 */
const MAX_WAIT_MS = 2500;
/** Wait after a failed claim (database unreachable), in ms, so an outage does not spin. */
const ERROR_BACKOFF_MS = 1000;
/**
 * Shortest and longest time from one claim to the next a wake asks for, in ms: wakes come after
 * every committed change and every answered send, and each would otherwise cost a claim (of
 * one delivery, or of none where changes write no delivery). The gap doubles after each claim
 * that found nothing and returns to the shortest once one finds work, so a busy queue is
 * claimed every few ms, several slots at a time, and an empty one about ten times a second at
 * most, whatever the rate of changes.
 */
const MIN_WAKE_GAP_MS = 5;
const MAX_WAKE_GAP_MS = 100;
/** Signing secrets kept decrypted, by their stored (encrypted) form: two per endpoint at most. */
const OPENED_SECRETS = 1024;

function metrics(registry: Registry, queue: DeliveryQueue) {
  return {
    pending: new Gauge({
      name: 'wum_webhook_deliveries_pending',
      help: 'Webhook deliveries waiting to be sent (pending, of any endpoint), counted at scrape time.',
      registers: [registry],
      async collect() {
        try {
          this.set(await queue.countPending());
        } catch {
          // Unknown while the database is away: keep the last value.
        }
      },
    }),
    latency: new Histogram({
      name: 'wum_webhook_delivery_latency_seconds',
      help: 'Time from an event to its successful delivery, in seconds (retries included).',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 36_000],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'wum_webhook_attempt_duration_seconds',
      help: 'Time a receiver took to answer one delivery attempt (or to fail), in seconds.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers: [registry],
    }),
    failures: new Counter({
      name: 'wum_webhook_delivery_failures_total',
      help: 'Failed webhook delivery attempts (non-2xx, timeout, network error, refused address), by endpoint id.',
      labelNames: ['endpoint'],
      registers: [registry],
    }),
    claims: new Counter({
      name: 'wum_webhook_claims_total',
      help: 'Claims of due deliveries (one statement each), by whether they found any (found="true") or none.',
      labelNames: ['found'],
      registers: [registry],
    }),
    handedOver: new Counter({
      name: 'wum_webhook_deliveries_handed_over_total',
      help: 'Deliveries this process wrote leased to its own worker and sent without a claim; the rest are claimed.',
      registers: [registry],
    }),
    disabled: new Counter({
      name: 'wum_webhook_endpoints_disabled_total',
      help: 'Endpoints disabled because a delivery used up its retry schedule.',
      registers: [registry],
    }),
  };
}

/**
 * Starts the delivery worker of this process (docs/contract.md Part B, Events and webhooks): it claims
 * due deliveries (`FOR UPDATE SKIP LOCKED`, so the workers of several replicas share the work
 * and each delivery is sent by one), sends each as a signed Standard Webhooks POST with at
 * most `concurrencyPerEndpoint` in flight per endpoint, records every attempt, schedules
 * retries with jitter along `retryScheduleMs`, and disables (and audits) an endpoint whose
 * delivery used up the schedule. It claims within a few ms of `wake()` (called when a slot
 * frees, after this process committed a change that wrote deliveries, or when another process
 * announced some), wakes being gathered over a gap of 5 ms, up to 100 ms while claims find
 * nothing; otherwise it polls every `pollIntervalMs`. An endpoint's slot is free again as soon
 * as its receiver answered; the outcome is recorded beside. It shares nothing with request
 * handling but the database pool, and a request never waits for it.
 */
export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const { queue, store, config, log } = options;
  const sender: WebhookSender = createWebhookSender(config, config.timeoutMs);
  const m = metrics(options.registry, queue);
  // Successes, the common outcome, are recorded in batches; failures one by one (they need the streak).
  const successes = successBatches((batch: readonly DeliverySuccess[]) => queue.recordSuccesses(batch), (s) => s.delivery.id);
  /** Deliveries being sent, by endpoint id (the per-endpoint bound). */
  const inFlight = new Map<string, number>();
  /**
   * Deliveries handed over while their endpoint's slots were all taken, by endpoint id, each with
   * when it was taken: sent as slots free, oldest first.
   */
  const waiting = new Map<string, Array<{ readonly delivery: ClaimedDelivery; readonly since: number }>>();
  let waitingTotal = 0;
  /** Most deliveries waiting for one endpoint's slots: a few rounds of its slots. */
  const waitingPerEndpoint = config.concurrencyPerEndpoint * WAITING_ROUNDS;
  const tasks = new Set<Promise<void>>();
  let stopping = false;
  /** Set by a wake (a committed change, a freed slot) since the last claim began. */
  let woken = false;
  let wakeUp: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;

  /**
   * Waits `ms`, or less if woken (`wakeable`) or stopped; resolves with whether a wake ended it.
   * Once stopped it waits not at all: `stop` during a claim found no wait to cut short.
   */
  const sleep = (ms: number, wakeable = true): Promise<boolean> => {
    if (stopping) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      wakeUp = () => {
        if (wakeable || stopping) resolve(true);
      };
      timer = setTimeout(() => resolve(false), ms);
    }).finally(() => {
      clearTimeout(timer);
      wakeUp = undefined;
    });
  };
  const wake = () => {
    woken = true;
    wakeUp?.();
  };

  // A stored secret always opens to the same secret (the keys are the process's own), so each is
  // decrypted once rather than on every delivery; the process holds the key that opens them all
  // anyway. A rotated-out secret is stored anew and drops out as the least recently used.
  const opened = boundedLru<string, string>(OPENED_SECRETS);
  const open = (stored: string): string => {
    let secret = opened.get(stored);
    if (secret === undefined) opened.set(stored, (secret = store.openSecret(stored)));
    return secret;
  };
  /**
   * Signs and sends one delivery; the stored secrets are decrypted only here (once each). A secret this
   * server's keys cannot decrypt sends nothing: the attempt fails with the reason, and is retried.
   */
  async function signAndSend(delivery: ClaimedDelivery, sentAt: Date, body: string): Promise<SendResult> {
    let secrets: string[];
    try {
      secrets = delivery.secrets.map(open);
    } catch (err) {
      log.error({ err, endpoint: delivery.endpointId }, 'cannot decrypt a webhook signing secret: check SECRETS_KEY (and SECRETS_KEY_PREVIOUS during a rotation)');
      return { error: `the signing secret cannot be decrypted with this server's SECRETS_KEY (${(err as Error).message})` };
    }
    return sender.send(delivery.url, { ...signDelivery(delivery.event.id, sentAt, body, secrets) }, body);
  }

  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    const body = JSON.stringify(toEventJson(delivery.event));
    const sentAt = new Date();
    const started = performance.now();
    const result = await signAndSend(delivery, sentAt, body);
    const durationMs = Math.round(performance.now() - started);
    m.duration.observe(durationMs / 1000);
    const ok = 'status' in result && result.status >= 200 && result.status < 300;
    const entry: DeliveryAttempt = {
      attempted_at: sentAt.toISOString(),
      response_status: 'status' in result ? result.status : null,
      error: 'error' in result ? result.error : null,
      duration_ms: durationMs,
    };
    if (ok) {
      // The endpoint's slot is free once the receiver answered: recording is the database's
      // work, and the lease keeps the delivery from being claimed again meanwhile.
      release(delivery);
      if (await successes.record({ delivery, attempt: entry })) m.latency.observe((Date.now() - delivery.event.createdAt.getTime()) / 1000);
      return;
    }
    m.failures.inc({ endpoint: delivery.endpointId });
    const retryInMs = retryDelayMs(config.retryScheduleMs, delivery.attempts + 1);
    const outcome: AttemptOutcome = retryInMs === undefined ? { kind: 'failed', attempt: entry } : { kind: 'retry', attempt: entry, retryInMs };
    const recorded = await queue.recordAttempt(delivery, outcome);
    if (!recorded.recorded) return;
    if (outcome.kind === 'failed') {
      log.warn({ delivery: delivery.id, endpoint: delivery.endpointId, event: delivery.event.id, ...entry }, 'webhook delivery failed for good');
      if (await disableFailingEndpoint(store, delivery.workspaceId, delivery.endpointId, recorded.failingSince)) {
        m.disabled.inc();
        log.warn({ endpoint: delivery.endpointId }, 'webhook endpoint disabled: its deliveries keep failing');
      }
    }
  }

  /** Deliveries whose endpoint slot is taken (sent, not yet answered). */
  const sending = new Set<string>();

  /** Frees the endpoint slot of `delivery` (once) and wakes the loop to fill it. */
  function release(delivery: ClaimedDelivery): void {
    if (!sending.delete(delivery.id)) return;
    const left = (inFlight.get(delivery.endpointId) ?? 1) - 1;
    if (left > 0) inFlight.set(delivery.endpointId, left);
    else inFlight.delete(delivery.endpointId);
    const next = nextWaiting(delivery.endpointId);
    if (next) run(next);
    else wake();
  }

  /** The oldest delivery waiting for a slot of `endpointId`; those that waited too long are given back. */
  function nextWaiting(endpointId: string): ClaimedDelivery | undefined {
    const queued = waiting.get(endpointId);
    const late: ClaimedDelivery[] = [];
    let next: ClaimedDelivery | undefined;
    while (queued && queued.length > 0 && !next) {
      const entry = queued.shift()!;
      waitingTotal -= 1;
      if (performance.now() - entry.since > MAX_WAIT_MS || stopping) late.push(entry.delivery);
      else next = entry.delivery;
    }
    if (queued?.length === 0) waiting.delete(endpointId);
    giveBack(late);
    return next;
  }

  /** Makes deliveries handed over but not sent due again, for a claim. */
  function giveBack(deliveries: readonly ClaimedDelivery[]): void {
    if (deliveries.length === 0) return;
    track(
      queue.releaseLeases(deliveries).catch((err: unknown) => {
        log.warn({ err, deliveries: deliveries.length }, 'could not release webhook deliveries handed over; they are claimed once their lease has passed');
      }),
    );
  }

  /** Deliveries sending or waiting, by endpoint: what a claim counts as taken. */
  function occupied(): ReadonlyMap<string, number> {
    if (waitingTotal === 0) return inFlight;
    const counts = new Map(inFlight);
    for (const [endpointId, queued] of waiting) counts.set(endpointId, (counts.get(endpointId) ?? 0) + queued.length);
    return counts;
  }

  /** Sends one claimed delivery; its endpoint's slot is freed once answered (or failed), and the loop woken. */
  function run(delivery: ClaimedDelivery): void {
    inFlight.set(delivery.endpointId, (inFlight.get(delivery.endpointId) ?? 0) + 1);
    sending.add(delivery.id);
    track(
      attempt(delivery)
        .catch((err: unknown) => log.error({ err, delivery: delivery.id }, 'could not record a webhook attempt'))
        .then(() => release(delivery)),
    );
  }

  /** Keeps `work` among the tasks `stop` waits for; wakes the loop when it ends. */
  function track(work: Promise<void>): void {
    const task = work.then(() => {
      tasks.delete(task);
      wake();
    });
    tasks.add(task);
  }

  /** Whether a delivery for `endpointId` can be sent now (a slot of its endpoint, room in the process). */
  const hasRoom = (endpointId: string) =>
    !stopping && tasks.size < MAX_IN_FLIGHT && (inFlight.get(endpointId) ?? 0) < config.concurrencyPerEndpoint;

  /**
   * Sends the deliveries a committed write of this process handed over, each at once or, while its
   * endpoint's slots are taken, as soon as one frees; any there is no room for (too many waiting,
   * or the worker is stopping) is made due again for a claim.
   */
  function take(deliveries: readonly ClaimedDelivery[]): void {
    const refused: ClaimedDelivery[] = [];
    for (const delivery of deliveries) {
      if (hasRoom(delivery.endpointId) && !waiting.has(delivery.endpointId)) {
        m.handedOver.inc();
        run(delivery);
        continue;
      }
      const queued = waiting.get(delivery.endpointId) ?? [];
      if (stopping || waitingTotal >= MAX_WAITING || queued.length >= waitingPerEndpoint) {
        refused.push(delivery);
        continue;
      }
      m.handedOver.inc();
      queued.push({ delivery, since: performance.now() });
      waiting.set(delivery.endpointId, queued);
      waitingTotal += 1;
    }
    giveBack(refused);
  }

  /** Whether some endpoint has as many deliveries waiting as it may: then writes hand nothing over. */
  // Asked before every write of a user: nothing to look at while nothing waits.
  const waitingFull = () =>
    waitingTotal > 0 && (waitingTotal >= MAX_WAITING || [...waiting.values()].some((queued) => queued.length >= waitingPerEndpoint));

  async function loop(): Promise<void> {
    let gapMs = MIN_WAKE_GAP_MS;
    while (!stopping) {
      let claimed: ClaimedDelivery[] = [];
      woken = false;
      const claimedAt = performance.now();
      if (tasks.size < MAX_IN_FLIGHT) {
        try {
          claimed = await queue.claimDue({
            inFlight: occupied(),
            maxEndpoints: MAX_ENDPOINTS,
            perEndpoint: config.concurrencyPerEndpoint,
            leaseMs: config.timeoutMs + LEASE_MARGIN_MS,
          });
          m.claims.inc({ found: String(claimed.length > 0) });
        } catch (err) {
          if (stopping) return;
          log.warn({ err }, 'could not claim webhook deliveries');
          await sleep(ERROR_BACKOFF_MS);
          continue;
        }
      }
      for (const delivery of claimed) run(delivery);
      // A claim takes every free slot of every endpoint with due work, so the next claim waits
      // for a wake (a slot freed, a change committed) or the poll, and then for the gap, over
      // which more wakes gather: after a claim that found work the shortest, else a longer one.
      if (claimed.length > 0) gapMs = MIN_WAKE_GAP_MS;
      const gap = gapMs;
      if (claimed.length === 0) gapMs = Math.min(gapMs * 2, MAX_WAKE_GAP_MS);
      if (!woken && !(await sleep(config.pollIntervalMs))) continue;
      const left = claimedAt + gap - performance.now();
      if (left > 0 && !stopping) await sleep(left, false);
    }
  }

  const running = loop();
  return {
    wake,
    // The lease a claim would set; none while an endpoint has as many waiting as it may (its
    // deliveries then wait for a claim) or the process has no room.
    leaseMs: () => (stopping || waitingFull() || tasks.size >= MAX_IN_FLIGHT ? 0 : config.timeoutMs + LEASE_MARGIN_MS),
    take,
    async stop() {
      stopping = true;
      wakeUp?.();
      await running;
      for (const endpointId of [...waiting.keys()]) nextWaiting(endpointId);
      await Promise.all(tasks);
      await sender.close();
    },
  };
}
