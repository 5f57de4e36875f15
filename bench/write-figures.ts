/*
 * What bench/writes.ts measures of each write against the plain route: shared with `npm run
 * bench`, which runs it as a child process (bench/child-sections.ts).
 */

/** The three writes priced, in the order they run. */
export const WRITES = ['POST', 'PATCH', 'DELETE'] as const;
/** One of the three writes priced. */
export type Write = (typeof WRITES)[number];

/** One server's figures for one write: its rate in each turn and the means over the turns. */
export interface WriteSide {
  /** Requests per second, one per turn. */
  readonly rates: readonly number[];
  readonly perSecond: number;
  /** CPU per request of the server process and of the database (µs; 0 for PGlite, inside the server). */
  readonly serverUs: number;
  readonly databaseUs: number;
  readonly errors: number;
}

/** A write of one backend against the plain route: what `--json` writes, one per backend and write. */
export interface WriteFigures {
  readonly backend: string;
  readonly write: Write;
  readonly service: WriteSide;
  readonly plain: WriteSide;
  /** The service's mean rate ÷ the plain route's. */
  readonly byRate: number;
  /** The plain route's server + database CPU per request ÷ the service's. */
  readonly byCpu: number;
}
