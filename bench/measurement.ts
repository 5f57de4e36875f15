/*
 * What one benchmark scenario measured, whoever generated the load (autocannon over HTTP, or
 * the SQL replayed straight through pg), and the latency recorder both use: exact
 * percentiles over every sample at sub-millisecond resolution (autocannon's own histogram
 * keeps whole milliseconds).
 */

/** Throughput, latency and failures of one scenario. */
export interface Measurement {
  /** Operations (HTTP requests or SQL round-trip sequences) completed in the measured window. */
  readonly operations: number;
  /** Length of the measured window, in seconds. */
  readonly seconds: number;
  /** `operations / seconds`. */
  readonly perSecond: number;
  /** Median and 99th-percentile latency, in milliseconds. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Failed operations: socket errors, timeouts, unexpected statuses, SQL errors. */
  readonly errors: number;
  /** What the failures were, e.g. `409×3, timeout×1`; empty when there were none. */
  readonly errorDetail: string;
}

/** Collects latencies (ms) up to a fixed capacity; samples beyond it are counted, not kept. */
export class LatencyRecorder {
  private readonly samples: Float64Array;
  private count = 0;

  constructor(capacity = 4_000_000) {
    this.samples = new Float64Array(capacity);
  }

  record(ms: number): void {
    if (this.count < this.samples.length) this.samples[this.count] = ms;
    this.count += 1;
  }

  /** The `q`-quantile (0–1) of the kept samples by the nearest-rank method; 0 when empty. */
  quantile(q: number): number {
    const kept = Math.min(this.count, this.samples.length);
    if (kept === 0) return 0;
    const sorted = this.samples.slice(0, kept).sort();
    return sorted[Math.min(kept - 1, Math.max(0, Math.ceil(q * kept) - 1))]!;
  }
}

/** Counts failures by kind, for {@link Measurement.errorDetail}. */
export class FailureTally {
  private readonly kinds = new Map<string, number>();

  add(kind: string, times = 1): void {
    if (times > 0) this.kinds.set(kind, (this.kinds.get(kind) ?? 0) + times);
  }

  get total(): number {
    let sum = 0;
    for (const n of this.kinds.values()) sum += n;
    return sum;
  }

  describe(): string {
    return [...this.kinds].map(([kind, n]) => `${kind}×${n}`).join(', ');
  }
}

/** Builds a {@link Measurement} from counts, a window and recorded latencies. */
export function measurement(operations: number, seconds: number, latencies: LatencyRecorder, failures: FailureTally): Measurement {
  return {
    operations,
    seconds,
    perSecond: seconds > 0 ? operations / seconds : 0,
    p50Ms: latencies.quantile(0.5),
    p99Ms: latencies.quantile(0.99),
    errors: failures.total,
    errorDetail: failures.describe(),
  };
}

/** The median of `values` (the upper one of an even count); NaN when there are none. */
export function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
}
