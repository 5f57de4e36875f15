import { toWireAuditEvent } from '../core/audit/wire-audit-event.ts';
import type { AuditStream, StreamFormat } from '../core/audit-streams/audit-stream.ts';
import type { StreamedAuditEvent } from '../core/ports.ts';

/** Writes one audit row as one line of a stream's format (JSON text, no newline). */
export type Formatter = (row: StreamedAuditEvent, stream: AuditStream) => string;

/**
 * The `json` format: each row exactly as `GET /audit-events` lists it; an operator's stream of
 * every workspace adds `workspace` (the subdomain, null for the operator's rows), as the
 * operator's listing of every workspace does.
 */
const json: Formatter = (row, stream) => {
  const { workspace, ...event } = row;
  return JSON.stringify(toWireAuditEvent(stream.workspaceId === null ? { ...event, workspace } : event));
};

/** The formatters by format; a format without one is refused at creation (`format_not_available`). */
export const formatters: { readonly [F in StreamFormat]?: Formatter } = { json };

/** The formats this server can write. */
export const availableFormats: ReadonlySet<StreamFormat> = new Set(Object.keys(formatters) as StreamFormat[]);
