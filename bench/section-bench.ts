import type { ServerHandle } from './processes.ts';

/** What a section of the benchmark that starts its own servers needs from the run. */
export interface SectionBench {
  /** Server environment (DATABASE_URL where it applies, log level, limits off). */
  readonly env: Record<string, string>;
  /** Starts one server with `env` (the run stops it on interruption). */
  readonly start: (env: Record<string, string>) => Promise<ServerHandle>;
  readonly connections: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly log: (message: string) => void;
}
