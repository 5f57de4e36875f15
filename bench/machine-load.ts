/*
 * Honest figures (docs/performance.md, "How to read the figures"): every benchmark reads the load average
 * when it starts, before it builds anything, and again when it reports. On two cores, a
 * 1-minute load of 1.5 or more at the start means something else was running; a ratio or a
 * verdict measured then says more about that than about wum, so it is printed marked
 * "BUSY — not a figure" instead of met or not met.
 */
import { loadavg } from 'node:os';

/** The 1-minute load average at start from which a run's ratios and verdicts are not figures. */
export const BUSY_LOAD = 1.5;

/** What a benchmark prints in place of a verdict (and after a ratio) when the machine was busy at start. */
export const BUSY_MARK = 'BUSY — not a figure';

/** The machine's load as a benchmark saw it. */
export interface MachineLoad {
  /** The 1-, 5- and 15-minute load averages when the benchmark started. */
  readonly atStart: readonly number[];
  /** Whether the 1-minute load average at start was {@link BUSY_LOAD} or more. */
  readonly busy: boolean;
  /** `load average at start 0.12 0.30 0.41, at end 1.02 0.50 0.43` (read now), and the busy mark when busy. */
  summary(): string;
  /** The verdict of a goal: `met`, `NOT met`, or {@link BUSY_MARK} when the machine was busy. */
  verdict(met: boolean): string;
  /** A ratio as `0.93×`, followed by ` (BUSY — not a figure)` when the machine was busy. */
  ratio(value: number): string;
}

const averages = (values: readonly number[]) => values.map((l) => l.toFixed(2)).join(' ');

/**
 * Reads the load average now, as the start of a benchmark (call it first, before building or
 * seeding, which load the machine themselves), and says on stderr when the machine is busy.
 * @param log - where the busy warning goes (default: stderr).
 * @returns the reading, which formats the end-of-run line and every verdict.
 */
export function watchMachineLoad(log: (message: string) => void = (m) => process.stderr.write(`${m}\n`)): MachineLoad {
  const atStart = loadavg();
  const busy = atStart[0]! >= BUSY_LOAD;
  log(`load average at start ${averages(atStart)}${busy ? ` (≥ ${BUSY_LOAD}: the machine is busy; ratios and verdicts will read "${BUSY_MARK}")` : ''}`);
  return {
    atStart,
    busy,
    summary: () => `load average at start ${averages(atStart)}, at end ${averages(loadavg())}${busy ? ` — ${BUSY_MARK}: the 1-minute load at start was ≥ ${BUSY_LOAD}` : ''}`,
    verdict: (met) => (busy ? BUSY_MARK : met ? 'met' : 'NOT met'),
    ratio: (value) => `${value.toFixed(2)}×${busy ? ` (${BUSY_MARK})` : ''}`,
  };
}
