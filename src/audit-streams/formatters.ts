import { toWireAuditEvent } from '../core/audit/wire-audit-event.ts';
import type { AuditStream, StreamFormat } from '../core/audit-streams/audit-stream.ts';
import type { StreamedAuditEvent } from '../core/audit-streams/audit-stream-repository.ts';
import { packageManifest } from '../package-root.ts';
import { toOcsf } from './ocsf.ts';

/** Writes one audit row as one line of a stream's format (JSON text, no newline). */
export type Formatter = (row: StreamedAuditEvent, stream: AuditStream) => string;

/**
 * The `json` format: each row exactly as `GET /audit-events` lists it; an operator's stream of
 * every workspace adds `workspace` (the subdomain, null for the operator's rows), as the
 * operator's listing of every workspace does.
 */
const json: Formatter = (row, stream) => JSON.stringify(toWireAuditEvent(rowOf(row, stream)));

/** The row with its workspace only in a stream of every workspace (a workspace's own stream names none). */
function rowOf({ workspace, ...event }: StreamedAuditEvent, stream: AuditStream) {
  return stream.workspaceId === null ? { ...event, workspace } : event;
}

/**
 * The `ocsf` format: each row as an OCSF event of the class that fits it (docs/api.md, "OCSF
 * mapping"); an operator's stream of every workspace keeps the row's workspace in `unmapped`.
 */
const ocsf: Formatter = (row, stream) => JSON.stringify(toOcsf(rowOf(row, stream), packageManifest()));

/** The formatters by format; a format without one is refused at creation (`format_not_available`). */
export const formatters: { readonly [F in StreamFormat]?: Formatter } = { json, ocsf };

/** The formats this server can write. */
export const availableFormats: ReadonlySet<StreamFormat> = new Set(Object.keys(formatters) as StreamFormat[]);
