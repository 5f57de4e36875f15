/**
 * What a {@link StatementCombiner} needs of the statements' work it gathers (writes, or
 * look-ups; "write" below stands for either).
 * @typeParam T - one write, as its caller submits it.
 * @typeParam R - its outcome.
 */
export interface StatementCombinerOptions<T, R> {
  /** Most batches of one lane running at once; a write that finds them all running waits for the next. */
  readonly maxInFlight: number;
  /** Most writes in one batch. */
  readonly maxBatch: number;
  /** What a write changes (a user's row id): two writes of the same thing never share a batch. A look-up's own object: any share one. */
  readonly identity: (write: T) => unknown;
  /**
   * Runs a batch (one write or several, of one lane) and settles each write's own outcome, in
   * the batch's order. A rejection rejects every write of the batch.
   */
  readonly run: (writes: readonly T[]) => Promise<ReadonlyArray<PromiseSettledResult<R>>>;
}

/** A write waiting in its lane, with how to settle its caller's promise. */
interface Waiting<T, R> {
  readonly write: T;
  readonly resolve: (outcome: R) => void;
  readonly reject: (reason: unknown) => void;
}

/** The writes of one lane: those waiting, and how many batches run. */
interface Lane<T, R> {
  waiting: Array<Waiting<T, R>>;
  inFlight: number;
}

/**
 * Gathers concurrent writes (or look-ups) into batches, lane by lane (a lane: what one statement
 * can carry together, such as the changes of one workspace's users). A write whose lane has fewer
 * than `maxInFlight` batches running starts one at once, with whatever waits beside it: a write
 * alone is never delayed. The others wait while those batches run, and the next batch takes them
 * together when one ends. The cost a database pays per statement (the round trip, the executor's
 * start, the commit, a workspace's sequence row) is then paid once per batch: under load the
 * batches grow, and alone a write costs what it did (docs/performance.md, "Several changes in one
 * statement"). Two writes of the same `identity` never share a batch: the later one waits for the
 * next. The idea is a database's group commit (one log flush for the commits that arrived
 * while the previous flush ran), applied to statements.
 */
export class StatementCombiner<T, R> {
  private readonly lanes = new Map<string, Lane<T, R>>();

  /** @param options - the batches' bounds and how a batch runs. */
  constructor(private readonly options: StatementCombinerOptions<T, R>) {}

  /**
   * Writes `write` in a batch of lane `lane`: its own outcome, or the reason its batch (or its own
   * write in it) failed.
   */
  submit(lane: string, write: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let state = this.lanes.get(lane);
      if (!state) this.lanes.set(lane, (state = { waiting: [], inFlight: 0 }));
      state.waiting.push({ write, resolve, reject });
      if (state.inFlight < this.options.maxInFlight) this.start(lane, state);
    });
  }

  /** Starts a batch of what waits in `lane`, at most `maxBatch` writes, each identity once. */
  private start(key: string, lane: Lane<T, R>): void {
    const { identity, maxBatch, run } = this.options;
    const batch: Array<Waiting<T, R>> = [];
    const left: Array<Waiting<T, R>> = [];
    const taken = new Set<unknown>();
    for (const waiting of lane.waiting) {
      const id = identity(waiting.write);
      if (batch.length < maxBatch && !taken.has(id)) {
        taken.add(id);
        batch.push(waiting);
      } else left.push(waiting);
    }
    lane.waiting = left;
    lane.inFlight += 1;
    const settle = (outcomes: ReadonlyArray<PromiseSettledResult<R>>) =>
      batch.forEach((waiting, i) => {
        const outcome = outcomes[i];
        if (outcome?.status === 'fulfilled') waiting.resolve(outcome.value);
        else waiting.reject(outcome ? outcome.reason : new Error('the batch gave no outcome for this write'));
      });
    const fail = (reason: unknown) => batch.forEach((waiting) => waiting.reject(reason));
    void run(batch.map((waiting) => waiting.write))
      .then(settle, fail)
      .finally(() => {
        lane.inFlight -= 1;
        if (lane.waiting.length > 0) this.start(key, lane);
        else if (lane.inFlight === 0) this.lanes.delete(key);
      });
  }
}
