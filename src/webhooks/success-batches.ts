import DataLoader from 'dataloader';

/** Most successes one statement records. */
const MAX_BATCH = 128;
/**
 * How long the first success of a batch waits for others, in ms: at hundreds of deliveries a
 * second this gathers several into one statement, and it delays freeing an endpoint's slot
 * (and so the next claim) by no more than this.
 */
const WINDOW_MS = 5;

/** Records a batch of successes; resolves with the keys of those recorded. */
export type RecordBatch<T> = (successes: readonly T[]) => Promise<ReadonlySet<string>>;

/**
 * Gathers the successful attempts that finish within {@link WINDOW_MS} of each other (at most
 * {@link MAX_BATCH}) and records them with one call of `recordBatch`, instead of one statement
 * per delivery (docs/performance.md, "Webhooks"). `record(success)` resolves with whether that
 * success was recorded (false: the delivery was no longer as claimed), or rejects with the
 * batch's error. Uses DataLoader's batching without its cache: each success is recorded once.
 *
 * @param keyOf - the key of a success (its delivery id) in the set `recordBatch` returns.
 */
export function successBatches<T>(recordBatch: RecordBatch<T>, keyOf: (success: T) => string): { record(success: T): Promise<boolean> } {
  const loader = new DataLoader<T, boolean>(
    async (successes) => {
      const recorded = await recordBatch(successes);
      return successes.map((success) => recorded.has(keyOf(success)));
    },
    { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (flush) => setTimeout(flush, WINDOW_MS) },
  );
  return { record: (success) => loader.load(success) };
}
