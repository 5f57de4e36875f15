import { Readable, pipeline } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { AuditEvent } from '../core/audit/audit-repository.ts';
import type { GlobalAuditEvent } from '../core/audit/audit-service.ts';
import { escapeCell } from '../../sdk/users-csv.ts';
import { toWireAuditEvent } from './schemas/admin.ts';

/** The format of an export and what it is sent as. */
const MEDIA_TYPES = { jsonl: 'application/x-ndjson', csv: 'text/csv; charset=utf-8' } as const;

/** A format of {@link auditExportStream}. */
export type AuditExportFormat = keyof typeof MEDIA_TYPES;

/** The CSV columns of an audit export, in order; `workspace` only in the operator's export of every workspace. */
const CSV_COLUMNS = [
  'id', 'occurred_at', 'actor_type', 'actor_id', 'actor_label', 'request_id',
  'action', 'target_type', 'target_id', 'user_id', 'before', 'after',
] as const;

/** One CSV cell: text as it is, a snapshot as its JSON, nothing for null; escaped like the user export's cells. */
function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString();
  return escapeCell(typeof value === 'string' ? value : JSON.stringify(value));
}

/** An event as a CSV record, in the order of `columns`. */
function csvRecord(event: AuditEvent | GlobalAuditEvent, columns: readonly string[]): string[] {
  const wire: Record<string, unknown> = { ...toWireAuditEvent(event), actor_label: event.actor.label ?? null };
  return columns.map((column) => cell(wire[column]));
}

/**
 * The body of an audit export: `batches` (as the core reads them) as JSON Lines, each line the
 * event exactly as the listing shows it, or as CSV with a header, written through the CSV
 * library with the user export's formula escaping (docs/security.md, "CSV formula injection").
 * Returns a stream whose source is pulled only as fast as the client reads (Node stream
 * backpressure), so an export of any length holds one batch at a time. `labelled`: the events
 * carry their workspace (the operator's export of every workspace), a column in CSV.
 * Source: docs/api.md, "Exporting the audit trail"; RFC 4180 (CSV).
 */
export function auditExportStream(
  batches: AsyncIterable<ReadonlyArray<AuditEvent | GlobalAuditEvent>>,
  format: AuditExportFormat,
  labelled: boolean,
): { readonly body: Readable; readonly contentType: string } {
  const contentType = MEDIA_TYPES[format];
  if (format === 'jsonl') {
    // One string per event, not per batch: a batch's megabyte string would sit in V8's large-object space until a full GC.
    const lines = async function* () {
      for await (const batch of batches) for (const event of batch) yield `${JSON.stringify(toWireAuditEvent(event))}\n`;
    };
    return { body: Readable.from(lines(), { objectMode: false }), contentType };
  }
  const columns = labelled ? ['id', 'occurred_at', 'workspace', ...CSV_COLUMNS.slice(2)] : [...CSV_COLUMNS];
  const records = async function* () {
    for await (const batch of batches) for (const event of batch) yield csvRecord(event, columns);
  };
  const csv = stringify({ header: true, columns });
  // An error of the source ends the body early: the client sees a cut response, never a made-up end.
  pipeline(Readable.from(records()), csv, () => undefined);
  return { body: csv, contentType };
}
