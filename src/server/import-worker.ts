import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../core/logger.ts';
import type { Store } from '../core/ports.ts';
import type { ImportClaim } from '../core/users/import-job.ts';
import { runImportBatch } from '../core/users/imports-service.ts';

/*
 * The worker of bulk import jobs (docs/contract.md Part B, "Importing users in bulk";
 * docs/architecture.md, background work): runs in every server process. It claims one job at a
 * time (`FOR UPDATE SKIP LOCKED`, under a lease it extends with each batch), applies it batch by
 * batch, each batch one transaction that records the job's progress too, and polls for the next
 * job when idle; after each batch it pauses, leaving the database and the cores to the
 * requests. A process that dies leaves its lease to run out; any process then resumes the
 * job from its last committed batch.
 */

/** How long a claim lasts without a committed batch: past it, another process resumes the job. */
const IMPORT_LEASE_MS = 10_000;
/** Rows per batch on a connection pool. */
const BATCH_SIZE = 1_000;
/**
 * The pause after a batch as a share of the batch's time: as long again, so that the requests
 * have the machine's cores (and, on the embedded store, its one connection) at least half the
 * time. On a pool, with no pause, once the batches read by key, 100,000 users took 17 s and
 * `GET /users` p99 was 2.4× its idle value; with this one, 34 s and 1.5×. On the embedded store,
 * once its own ANALYZE passes sampled fewer rows (embedded-maintenance.ts), batches of 20 ms and
 * as long a pause took 83 s (169 s before) (docs/performance.md, "npm run bench:import").
 */
const PAUSE_SHARE = 1;
/**
 * On the embedded store's one connection: the bounds of the adaptive batch, and the time one
 * should take. A request waits for the batch under way, so the target bounds what an import adds
 * to a request's time: at 100 ms, `GET /users` p99 during a 100,000-user import was 14.7× its idle
 * value; at 20 ms, once the store ran its statements named, 2.4× in 66 s; at 10 ms, 1.9–2.0× in
 * 87–92 s (docs/performance.md, "npm run bench:import").
 */
const SHARED_MIN_BATCH = 20;
const SHARED_TARGET_MS = 10;
/** Consecutive failures of a job's batches after which the job fails. */
const MAX_FAILURES = 5;

/** A running import worker. */
export interface ImportWorker {
  /** Looks for a job now rather than at the next poll. */
  wake(): void;
  /** Stops; resolves once the batch under way has committed or rolled back. */
  stop(): Promise<void>;
}

/** Options of {@link startImportWorker}. */
export interface ImportWorkerOptions {
  readonly store: Store;
  readonly log: Logger;
  /** How often an idle worker looks for a job, in ms (default 1 s). */
  readonly pollMs?: number;
  /**
   * True when one connection serves the requests and the batches alike (the embedded store):
   * batches then adapt to about {@link SHARED_TARGET_MS} and are followed by a pause as long,
   * so requests keep being answered during an import.
   */
  readonly sharedConnection?: boolean;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** Starts the worker; nothing throws out of it (failures are logged and retried). */
export function startImportWorker(options: ImportWorkerOptions): ImportWorker {
  const { store, log } = options;
  const pollMs = options.pollMs ?? 1_000;
  const shared = options.sharedConnection ?? false;
  const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
  let stopping = false;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  // A first batch of 200 held every request of the embedded store for 110 ms: start small, grow to the target.
  let batchSize = shared ? 2 * SHARED_MIN_BATCH : BATCH_SIZE;

  /** Runs a claimed job's batches until it is over, this worker stops, or its batches keep failing. */
  async function work(claim: ImportClaim): Promise<void> {
    let failures = 0;
    while (!stopping) {
      const started = performance.now();
      try {
        if ((await runImportBatch(store, claim, owner, batchSize, IMPORT_LEASE_MS)) === 'done') return;
        failures = 0;
      } catch (err) {
        failures += 1;
        log.error({ err, job: claim.jobId, failures }, 'an import batch failed; it will be retried');
        if (failures >= MAX_FAILURES) {
          await store.imports.fail(claim.workspaceId, claim.jobId, 'the import failed on the server; see its logs').catch(() => {});
          return;
        }
        await sleep(1_000);
        continue;
      }
      const took = performance.now() - started;
      if (shared) {
        batchSize = took > SHARED_TARGET_MS ? Math.max(SHARED_MIN_BATCH, Math.floor(batchSize / 2)) : took < SHARED_TARGET_MS / 2 ? Math.min(BATCH_SIZE, batchSize * 2) : batchSize;
      }
      await sleep(took * PAUSE_SHARE);
    }
  }

  const loop = (async () => {
    while (!stopping) {
      // A wake that comes while this pass looks for a job is kept: the pass then looks again at once.
      woken = false;
      let claim: ImportClaim | undefined;
      try {
        claim = await store.imports.claim(owner, IMPORT_LEASE_MS);
      } catch (err) {
        log.warn({ err }, 'could not look for import jobs; trying again');
      }
      if (claim) {
        log.info({ job: claim.jobId, workspaceId: claim.workspaceId }, 'import job claimed');
        await work(claim);
        continue;
      }
      // Stopped while it looked: `stop` found no wait to cut short, so none may start.
      if (woken || stopping) continue;
      await new Promise<void>((resolve) => {
        wakeUp = resolve;
        setTimeout(resolve, pollMs).unref();
      });
      wakeUp = undefined;
    }
  })();

  return {
    wake: () => {
      woken = true;
      wakeUp?.();
    },
    async stop() {
      stopping = true;
      wakeUp?.();
      await loop;
    },
  };
}
