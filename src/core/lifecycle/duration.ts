import { parse } from 'tinyduration';
import { AppError } from '../errors.ts';

/*
 * ISO 8601 durations of the access policies (docs/contract.md Part B, "Access that ends on
 * time"), read with `tinyduration`. Only units of fixed length are taken (weeks, days, hours,
 * minutes, seconds): a month or a year has no one length in seconds, and a policy that
 * deactivates people must not depend on the calendar it happens to run in.
 */

const SECONDS = { weeks: 604_800, days: 86_400, hours: 3_600, minutes: 60, seconds: 1 } as const;

/**
 * The length in seconds of the ISO 8601 duration `text` (e.g. `P90D`, `PT30S`, `P1W`), or
 * undefined when it is no duration, is negative, or uses years or months.
 * Source: ISO 8601-1:2019 §5.5.2 (durations), as `tinyduration` reads them.
 */
export function durationSeconds(text: string): number | undefined {
  let duration;
  try {
    duration = parse(text);
  } catch {
    return undefined;
  }
  if (duration.negative || duration.years || duration.months) return undefined;
  return (Object.keys(SECONDS) as Array<keyof typeof SECONDS>).reduce((total, unit) => total + (duration[unit] ?? 0) * SECONDS[unit], 0);
}

/**
 * Reads a policy's duration `text` (the body field `field`) and checks it is at least
 * `minSeconds` long (the `POLICY_MIN_DURATION` setting).
 * @returns its length in seconds.
 * @throws AppError `invalid_duration` (422) naming `field`.
 */
export function policyDuration(text: string, field: string, minSeconds: number, minText: string): number {
  const seconds = durationSeconds(text);
  if (seconds === undefined) {
    throw new AppError('invalid_duration', `${field} must be an ISO 8601 duration in weeks, days, hours, minutes or seconds (e.g. P90D).`, [
      { field, message: 'must be an ISO 8601 duration such as P90D (no years or months)' },
    ]);
  }
  if (seconds < minSeconds) {
    throw new AppError('invalid_duration', `${field} must be at least ${minText}.`, [{ field, message: `must be at least ${minText}` }]);
  }
  return seconds;
}
