/*
 * The benchmark's one table: every scenario with its throughput, latency, errors, the
 * server's and PostgreSQL's CPU and memory, and its ratio to the baseline measured in the
 * same run, printed as an aligned Markdown table (readable in a terminal, pastable into
 * docs/performance.md).
 */
import Table from 'cli-table3';
import type { MachineLoad } from './machine-load.ts';
import type { Measurement } from './measurement.ts';
import type { Usage } from './processes.ts';

/** CPU in percent of one core. */
type CpuUsage = { readonly cpuPercent: number };

/** One row of the report. */
export interface ReportRow {
  readonly scenario: string;
  /** Load figures; undefined for rows that only report a time (start-up). */
  readonly measured?: Measurement;
  readonly server?: Usage;
  readonly database?: Usage;
  /** This process's CPU meanwhile: the load generator (autocannon, or the replay's pg clients). */
  readonly client?: CpuUsage;
  /** The baseline this row is compared to: its label and rate (operations per second). */
  readonly baseline?: { readonly label: string; readonly perSecond: number };
  /** Target on the ratio to the baseline (e.g. 0.7), or on p99 in ms, with whether it was met. */
  readonly target?: { readonly text: string; readonly met: boolean };
  /**
   * The rate of the bare Fastify route running the same recorded SQL (bench/framework-ceiling.ts)
   * and the least ratio to it that meets the goal.
   */
  readonly sqlCeiling?: { readonly perSecond: number; readonly goal: number };
  /** Free text for figures that are not rates (start-up time, exactness checks). */
  readonly note?: string;
}

/** A heading and its rows. */
export interface ReportSection {
  readonly title: string;
  readonly rows: readonly ReportRow[];
}

const MARKDOWN_CHARS = {
  top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
  bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
  left: '|', 'left-mid': '', mid: '', 'mid-mid': '', right: '|', 'right-mid': '', middle: '|',
};

const HEAD = [
  'scenario',
  'req/s',
  'p50 ms',
  'p99 ms',
  'errors',
  'server CPU % (µs/req)',
  'server RSS MB',
  'DB CPU % (µs/req)',
  'load generator CPU % (µs/req)',
  'Σ CPU µs/req',
  'vs baseline',
  'target',
  'vs bare Fastify + same SQL',
];

function mb(bytes: number | undefined): string {
  return bytes === undefined ? '' : (bytes / 1024 / 1024).toFixed(0);
}

/** CPU as a percentage of one core, and per operation: `101 (71)`. */
function cpu(usage: CpuUsage | undefined, measured: Measurement | undefined): string {
  if (!usage) return '';
  const perOperation = measured && measured.perSecond > 0 ? ` (${microsecondsPer(usage, measured).toFixed(0)})` : '';
  return `${usage.cpuPercent.toFixed(0)}${perOperation}`;
}

/** CPU microseconds per operation. */
function microsecondsPer(usage: CpuUsage, measured: Measurement): number {
  return (usage.cpuPercent / 100 / measured.perSecond) * 1e6;
}

/**
 * CPU of every process involved (server, database, load generator) per operation: on a
 * machine whose cores are all busy, the rate is at most cores × 10⁶ / this.
 */
function totalCpu(row: ReportRow): string {
  const m = row.measured;
  if (!m || m.perSecond <= 0 || !row.client) return '';
  return [row.server, row.database, row.client].reduce((sum, u) => sum + (u ? microsecondsPer(u, m) : 0), 0).toFixed(0);
}

function ms(value: number): string {
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

/** `perSecond / baseline` as `0.83× db ceiling`. */
export function ratio(row: ReportRow): number | undefined {
  return row.measured && row.baseline && row.baseline.perSecond > 0 ? row.measured.perSecond / row.baseline.perSecond : undefined;
}

/** `0.83× (≥ 0.8× met)`: the rate against the bare route running the same SQL, and its goal. */
function sqlCeilingCell(row: ReportRow, load: MachineLoad): string {
  if (!row.measured || !row.sqlCeiling || row.sqlCeiling.perSecond <= 0) return '';
  const r = row.measured.perSecond / row.sqlCeiling.perSecond;
  return `${r.toFixed(2)}× (≥ ${row.sqlCeiling.goal}× ${load.verdict(r >= row.sqlCeiling.goal && row.measured.errors === 0)})`;
}

function cells(row: ReportRow, load: MachineLoad): string[] {
  const m = row.measured;
  const r = ratio(row);
  const rss = row.server ? `${mb(row.server.maxRssBytes)}${row.server.totalRssBytes > row.server.maxRssBytes * 1.05 ? ` (Σ ${mb(row.server.totalRssBytes)})` : ''}` : '';
  return [
    row.scenario,
    m ? m.perSecond.toFixed(0) : (row.note ?? ''),
    m ? ms(m.p50Ms) : '',
    m ? ms(m.p99Ms) : '',
    m ? (m.errors === 0 ? '0' : `${m.errors} (${m.errorDetail})`) : '',
    cpu(row.server, m),
    rss,
    cpu(row.database, m),
    cpu(row.client, m),
    totalCpu(row),
    r === undefined ? (m && row.note ? row.note : '') : `${load.ratio(r)} ${row.baseline!.label}`,
    row.target ? `${row.target.text} ${load.verdict(row.target.met)}` : '',
    sqlCeilingCell(row, load),
  ];
}

/**
 * Renders the sections as one Markdown table, a bold row per section title, followed by the
 * load average at start and now; on a machine busy at start every ratio and verdict is marked
 * (bench/machine-load.ts).
 */
export function renderReport(sections: readonly ReportSection[], load: MachineLoad): string {
  const table = new Table({ chars: MARKDOWN_CHARS, style: { head: [], border: [], 'padding-left': 1, 'padding-right': 1 } });
  table.push(HEAD, HEAD.map(() => '---'));
  for (const section of sections) {
    table.push([`**${section.title}**`, ...HEAD.slice(1).map(() => '')]);
    for (const row of section.rows) table.push(cells(row, load));
  }
  return `${table.toString()}\n\n${load.summary()}`;
}
