/*
 * HTTP load with autocannon: a fixed number of keep-alive connections, each sending its next
 * request as soon as the previous answered, for a bounded time. Every request is built by the
 * scenario (unique emails, random workspaces), and every response is classified: statuses
 * the scenario does not expect count as errors.
 */
import autocannon from 'autocannon';
import { FailureTally, LatencyRecorder, measurement, type Measurement } from './measurement.ts';

/** One request of a scenario. */
export interface HttpRequestSpec {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/** A load run against 127.0.0.1:`port`. */
export interface HttpLoad {
  readonly port: number;
  /** Concurrent connections (= requests in flight). */
  readonly connections: number;
  /** Measured window, in seconds. */
  readonly seconds: number;
  /** Builds the next request; called once per request sent. */
  readonly next: () => HttpRequestSpec;
  /** Statuses that count as success; default: any 2xx. */
  readonly expected?: readonly number[];
  /** Requests per second across all connections (paced); default: as fast as answers come. */
  readonly overallRate?: number;
  /** Ends the load early when it settles (then `seconds` is only the longest it may run). */
  readonly until?: Promise<unknown>;
}

/** Runs one load and measures it; never throws for failed requests (they are counted). */
export async function runHttpLoad(load: HttpLoad): Promise<Measurement> {
  const latencies = new LatencyRecorder();
  const failures = new FailureTally();
  let responses = 0;
  const ok = (status: number) => (load.expected ? load.expected.includes(status) : status >= 200 && status < 300);
  const instance = autocannon({
    url: `http://127.0.0.1:${load.port}`,
    connections: load.connections,
    duration: load.seconds,
    timeout: 10,
    ...(load.overallRate ? { overallRate: load.overallRate } : {}),
    requests: [{ setupRequest: (request) => ({ ...request, ...load.next() }) }],
  }) as unknown as autocannon.Instance & Promise<autocannon.Result>;
  // Without a callback autocannon returns its event emitter, made thenable.
  // `on` returns that same thenable, which is awaited below, not here.
  void instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    responses += 1;
    latencies.record(responseTime);
    if (!ok(statusCode)) failures.add(String(statusCode));
  });
  void load.until?.then(() => instance.stop());
  const result = await instance;
  failures.add('timeout', result.timeouts);
  failures.add('socket error', result.errors - result.timeouts);
  return measurement(responses, result.duration, latencies, failures);
}
