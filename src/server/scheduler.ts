/*
 * One scheduler for the periodic work of a process (retention, idempotency records, the
 * embedded store's upkeep, the audit streams' pauses, the sweeps of access that ends on time): each task is a pass that runs alone (never
 * two of one task at once), on timers that never keep the process alive, with failures logged
 * through one logger and retried at the next pass, and one `stop` that waits for the passes
 * under way. Written here rather than taken from a library because tasks choose their next
 * delay from what a pass found (the embedded upkeep runs again soon after a pass that did
 * something; the lifecycle sweep at the next due instant) and are moved by events (a user
 * written), which interval-only schedulers do not express. Source: docs/architecture.md,
 * "What runs in the background".
 */

/** One kind of periodic work. */
export interface ScheduledTask {
  /** Its name in the log (`task`). */
  readonly name: string;
  /** Delay between two passes, in ms. */
  readonly intervalMs: number;
  /** Delay of the first pass after start, in ms; default `intervalMs`. */
  readonly firstDelayMs?: number;
  /**
   * One pass; resolves with the delay until the next in ms, or nothing for `intervalMs`. A
   * rejection is logged and the next pass comes after `intervalMs`. `stopping` is aborted when
   * the scheduler stops: a long pass ends early (between two batches) rather than hold up the shutdown.
   */
  run(stopping: AbortSignal): Promise<number | void>;
}

/** A task as scheduled. */
export interface ScheduledJob {
  /** Runs a pass now (or joins the pass under way); resolves when it ends, never rejects. */
  runNow(): Promise<void>;
  /**
   * Moves the next pass to `delayMs` from now, sooner or later than planned; while a pass runs
   * nothing changes (its end plans the next).
   */
  runIn(delayMs: number): void;
}

/** The scheduler of one process. */
export interface Scheduler {
  /** Schedules `task`'s first pass; nothing runs after {@link Scheduler.stop}. */
  add(task: ScheduledTask): ScheduledJob;
  /** Stops every task: no pass starts after it; resolves once the passes under way have ended. */
  stop(): Promise<void>;
}

/** Where the scheduler reports a failed pass (pino's call shape; a Fastify or pino logger fits). */
export interface SchedulerLog {
  warn(fields: object, message: string): void;
}

/** Creates a scheduler whose tasks log their failures to `log`. Throws nothing. */
export function createScheduler(log: SchedulerLog): Scheduler {
  const stopping = new AbortController();
  const stopped = () => stopping.signal.aborted;
  const timers = new Set<NodeJS.Timeout>();
  const running = new Set<Promise<void>>();

  function add(task: ScheduledTask): ScheduledJob {
    let timer: NodeJS.Timeout | undefined;
    let current: Promise<void> | undefined;

    const schedule = (delayMs: number) => {
      if (stopped()) return;
      if (timer) {
        clearTimeout(timer);
        timers.delete(timer);
      }
      timer = setTimeout(() => {
        if (timer) timers.delete(timer);
        timer = undefined;
        void runNow();
      }, delayMs);
      timer.unref();
      timers.add(timer);
    };

    const runNow = (): Promise<void> => {
      if (current) return current;
      if (stopped()) return Promise.resolve();
      const pass = task.run(stopping.signal).then(
        (next) => schedule(typeof next === 'number' ? next : task.intervalMs),
        (err: unknown) => {
          log.warn({ err, task: task.name }, `${task.name}: a pass failed; the next one retries`);
          schedule(task.intervalMs);
        },
      );
      current = pass.finally(() => {
        current = undefined;
        running.delete(pass);
      });
      running.add(pass);
      return current;
    };

    schedule(task.firstDelayMs ?? task.intervalMs);
    return {
      runNow,
      runIn: (delayMs) => {
        if (!current) schedule(delayMs);
      },
    };
  }

  return {
    add,
    async stop() {
      stopping.abort();
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all(running);
    },
  };
}
