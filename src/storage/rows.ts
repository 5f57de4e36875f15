/*
 * The one adapter from a driver's result to rows: node-postgres and PGlite answer Drizzle's
 * `execute` and prepared statements with `{ rows, rowCount }` (PGlite: `affectedRows`), and
 * node-postgres a multi-statement simple query with an array of those.
 */

/** The rows of a result (`{ rows }`, or the rows themselves). */
export function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : (result as { rows: T[] }).rows;
}

/** How many rows a statement changed (`rowCount` on node-postgres, `affectedRows` on PGlite); 0 when unknown. */
export function rowCount(result: unknown): number {
  const r = result as { rowCount?: number | null; affectedRows?: number };
  return Number(r.rowCount ?? r.affectedRows ?? 0);
}

/** The result of the last statement of a simple query that may have run several. */
export function lastResult<R>(result: R | R[]): R | undefined {
  return Array.isArray(result) ? result[result.length - 1] : result;
}
