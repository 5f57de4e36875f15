/*
 * A stream worker on a test context's database, as the server runs it (src/server/service.ts):
 * its queue, the context's store and outbound policy, and the pause check on the scheduler
 * every PAUSE_CHECK_MS. docs/operations.md, "Audit streams".
 */
import { Registry } from 'prom-client';
import { PAUSE_CHECK_MS, startStreamWorker } from '../../src/audit-streams/stream-worker.ts';
import { createScheduler } from '../../src/server/scheduler.ts';
import { createStreamQueue } from '../../src/storage/audit-streams.queries.ts';
import type { TestContext } from './test-context.ts';

/** A running test stream worker. */
export interface TestStreamWorker {
  /** Stops the pause checks and the worker; resolves once the batches in flight have ended. */
  stop(): Promise<void>;
}

/** What differs between the tests' workers: the send timeout and the pause threshold (ms), and where metrics go. */
export interface TestStreamWorkerOptions {
  readonly timeoutMs: number;
  readonly pauseAfterMs: number;
  readonly registry?: Registry;
}

const silent = { info() {}, warn() {}, error() {}, debug() {}, child() { return this; } };

/** Starts a stream worker over `ctx` with its pause check scheduled; logs nothing. */
export function startTestStreamWorker(ctx: Pick<TestContext, 'database' | 'store' | 'config'>, options: TestStreamWorkerOptions): TestStreamWorker {
  const worker = startStreamWorker({
    queue: createStreamQueue(ctx.database.db),
    store: ctx.store,
    settings: { policy: ctx.config.outbound, timeoutMs: options.timeoutMs, pauseAfterMs: options.pauseAfterMs },
    log: silent as never,
    registry: options.registry ?? new Registry(),
  });
  const scheduler = createScheduler(silent);
  scheduler.add({ name: 'audit-stream-pauses', intervalMs: PAUSE_CHECK_MS, run: () => worker.checkPauses() });
  return {
    async stop() {
      await scheduler.stop();
      await worker.stop();
    },
  };
}
