import { AppError } from '../core/errors.ts';
import { DEFAULT_COUNT, MAX_COUNT, URN } from './constants.ts';

/** A window of a list request: `startIndex` as given (≥ 1), and the rows to skip and return. */
export interface ListWindow {
  readonly startIndex: number;
  readonly offset: number;
  readonly limit: number;
}

/** One query parameter given at most once, as text. */
export function singleParameter(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new AppError('invalid_value', `The query parameter ${name} must be given once.`);
  return value;
}

/** An integer parameter, or undefined when absent. */
function integerParameter(query: Record<string, unknown>, name: string): number | undefined {
  const text = singleParameter(query, name);
  if (text === undefined) return undefined;
  if (!/^[+-]?\d{1,15}$/.test(text.trim())) throw new AppError('invalid_value', `${name} must be an integer.`);
  return Number(text.trim());
}

/**
 * Reads `startIndex` and `count`: `startIndex` below 1 is read as 1 and a negative `count` as
 * 0 (RFC 7644 §3.4.2.4); `count` defaults to {@link DEFAULT_COUNT} and is lowered to
 * {@link MAX_COUNT} (docs/contract.md Part B).
 *
 * @throws AppError `invalid_value` (400) for a value that is not an integer, or a repeated parameter.
 */
export function readListWindow(query: Record<string, unknown>): ListWindow {
  const startIndex = Math.max(1, integerParameter(query, 'startIndex') ?? 1);
  const count = Math.min(MAX_COUNT, Math.max(0, integerParameter(query, 'count') ?? DEFAULT_COUNT));
  return { startIndex, offset: startIndex - 1, limit: count };
}

/** A ListResponse message (RFC 7644 §3.4.2). */
export function listResponse(resources: readonly unknown[], totalResults: number, startIndex: number): Record<string, unknown> {
  return {
    schemas: [URN.listResponse],
    totalResults,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}
