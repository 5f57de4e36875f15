/*
 * What bench/import-job.ts measures of one import job, and the goals it is held to: shared with
 * `npm run bench`, which runs it as a child process (bench/child-sections.ts).
 */

/** The job's time goal at 100,000 users, per backend (docs/performance.md, "The targets"). */
export const IMPORT_GOAL_SECONDS = { pglite: 120, postgres: 60 } as const;

/** How a backend is named in the figures. */
export const IMPORT_BACKEND_LABEL = { pglite: 'embedded PGlite', postgres: 'PostgreSQL' } as const;

/** The users of an import job the time goal is stated for. */
export const IMPORT_GOAL_USERS = 100_000;

/** What `--json` writes: one import job and the listing's p99 beside it. */
export interface ImportFigures {
  readonly backend: 'pglite' | 'postgres';
  readonly users: number;
  /** The job's final status and users added. */
  readonly status: string;
  readonly added: number;
  /** From the upload's start to the job's end, and the upload alone (seconds). */
  readonly seconds: number;
  readonly uploadSeconds: number;
  /** `GET /users` page 1 p99 from two callers, idle and during the job (ms). */
  readonly idleP99Ms: number;
  readonly duringP99Ms: number;
}
