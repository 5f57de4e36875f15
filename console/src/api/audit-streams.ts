/*
 * Audit streams (docs/api.md, "Audit streams"): an owner's, of their workspace, through its own
 * API (`/api/external/v2/audit-streams`, scope `audit:write`), or the operator's, of any
 * workspace or of every one, through `/admin/v1/audit-streams`. Both serve the same shapes (one
 * route definition), so the calls are typed by the workspace API's paths in sdk/schema.ts and
 * only the prefix differs. Every call throws WumApiError on failure (see `send`).
 */
import type { operations } from '../../../sdk/schema.ts';
import type { Json } from './admin.ts';
import { api, send } from './client.ts';

/** A stream: its settings (never its credentials) and health. */
export type AuditStream = Json<'getOwnAuditStream', 200>;
/** A new stream, with the signing secret of an `https` destination (shown once). */
export type AuditStreamWithSecret = Json<'createOwnAuditStream', 201>;
/** The body of a create; `workspace` (a subdomain, or null for every workspace) is the operator's only. */
export type NewAuditStream = operations['createAuditStream']['requestBody']['content']['application/json'];
/** Where a stream sends, as a create gives it (credentials included). */
export type StreamDestination = NewAuditStream['destination'];
/** The answer of a replay: the stream after the rewind, and whether retention kept every row since `from`. */
export type StreamReplay = Json<'replayOwnAuditStream', 200>;
/** What the destination answered to a test row. */
export type StreamTestOutcome = Json<'testOwnAuditStream', 200>;

/** Whose streams: the signed-in owner's workspace, or the operator's (every workspace's). */
export type StreamsSide = 'owner' | 'operator';

const OWNER_PREFIX = '/api/external/v2';

/** `path` (a workspace API path) for `side`: the operator's is the same under `/admin/v1`. */
function on<P extends `${typeof OWNER_PREFIX}/audit-streams${string}`>(side: StreamsSide, path: P): P {
  return (side === 'owner' ? path : `/admin/v1${path.slice(OWNER_PREFIX.length)}`) as P;
}

/** The audit stream calls of the console, for `side`. */
export function auditStreamsApi(side: StreamsSide) {
  const streams = on(side, '/api/external/v2/audit-streams');
  const stream = on(side, '/api/external/v2/audit-streams/{id}');
  return {
    /** Every stream with its health, oldest first. */
    async list(signal?: AbortSignal): Promise<AuditStream[]> {
      return (await send(`GET ${streams}`, (s) => api.GET(streams, { signal: s }), signal)).data.audit_streams;
    },
    /** Creates a stream; an https one's secret is in the answer, this once. @throws `validation_failed` (400, fields under `destination`). */
    async create(body: NewAuditStream): Promise<AuditStreamWithSecret> {
      return (await send(`POST ${streams}`, (s) => api.POST(streams, { body, signal: s }))).data;
    },
    /** Pauses (`paused`) or resumes (`active`, from the cursor at once). @throws `audit_stream_not_found` (404). */
    async setStatus(id: string, status: 'active' | 'paused'): Promise<AuditStream> {
      return (await send(`PATCH ${stream}`, (s) => api.PATCH(stream, { params: { path: { id } }, body: { status }, signal: s }))).data;
    },
    /** Deletes the stream. @throws `audit_stream_not_found` (404). */
    async remove(id: string): Promise<void> {
      await send(`DELETE ${stream}`, (s) => api.DELETE(stream, { params: { path: { id } }, signal: s }));
    },
    /** Sends one synthetic row now; the answer says whether the destination took it. */
    async test(id: string): Promise<StreamTestOutcome> {
      const path = on(side, '/api/external/v2/audit-streams/{id}/test');
      return (await send(`POST ${path}`, (s) => api.POST(path, { params: { path: { id } }, signal: s }))).data;
    },
    /** Sends the rows from `from` (RFC 3339) on again. @throws `validation_failed` (400). */
    async replay(id: string, from: string): Promise<StreamReplay> {
      const path = on(side, '/api/external/v2/audit-streams/{id}/replay');
      return (await send(`POST ${path}`, (s) => api.POST(path, { params: { path: { id } }, body: { from }, signal: s }))).data;
    },
  };
}
