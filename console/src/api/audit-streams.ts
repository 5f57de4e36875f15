/*
 * The workspace's audit streams through its own API (`/api/external/v2/audit-streams`, scope
 * `audit:write`; docs/api.md, "Audit streams"), typed from sdk/schema.ts. Every call throws
 * WumApiError on failure (see `send`).
 */
import type { operations } from '../../../sdk/schema.ts';
import type { Json } from './admin.ts';
import { api, send } from './client.ts';

/** A stream: its settings (never its credentials) and health. */
export type AuditStream = Json<'getOwnAuditStream', 200>;
/** A new stream, with the signing secret of an `https` destination (shown once). */
export type AuditStreamWithSecret = Json<'createOwnAuditStream', 201>;
/** The body of a create. */
export type NewAuditStream = operations['createOwnAuditStream']['requestBody']['content']['application/json'];
/** Where a stream sends, as a create gives it (credentials included). */
export type StreamDestination = NewAuditStream['destination'];
/** The answer of a replay: the stream after the rewind, and whether retention kept every row since `from`. */
export type StreamReplay = Json<'replayOwnAuditStream', 200>;
/** What the destination answered to a test row. */
export type StreamTestOutcome = Json<'testOwnAuditStream', 200>;

const STREAMS = '/api/external/v2/audit-streams';
const STREAM = '/api/external/v2/audit-streams/{id}';

/** The audit stream calls of the owner's console. */
export const auditStreamsApi = {
  /** Every stream with its health, oldest first. */
  async list(signal?: AbortSignal): Promise<AuditStream[]> {
    return (await send(`GET ${STREAMS}`, (s) => api.GET(STREAMS, { signal: s }), signal)).data.audit_streams;
  },
  /** Creates a stream; an https one's secret is in the answer, this once. @throws `validation_failed` (400, fields under `destination`). */
  async create(body: NewAuditStream): Promise<AuditStreamWithSecret> {
    return (await send(`POST ${STREAMS}`, (s) => api.POST(STREAMS, { body, signal: s }))).data;
  },
  /** Pauses (`paused`) or resumes (`active`, from the cursor at once). @throws `audit_stream_not_found` (404). */
  async setStatus(id: string, status: 'active' | 'paused'): Promise<AuditStream> {
    return (await send(`PATCH ${STREAM}`, (s) => api.PATCH(STREAM, { params: { path: { id } }, body: { status }, signal: s }))).data;
  },
  /** Deletes the stream. @throws `audit_stream_not_found` (404). */
  async remove(id: string): Promise<void> {
    await send(`DELETE ${STREAM}`, (s) => api.DELETE(STREAM, { params: { path: { id } }, signal: s }));
  },
  /** Sends one synthetic row now; the answer says whether the destination took it. */
  async test(id: string): Promise<StreamTestOutcome> {
    const path = '/api/external/v2/audit-streams/{id}/test';
    return (await send(`POST ${path}`, (s) => api.POST(path, { params: { path: { id } }, signal: s }))).data;
  },
  /** Sends the rows from `from` (RFC 3339) on again. @throws `validation_failed` (400). */
  async replay(id: string, from: string): Promise<StreamReplay> {
    const path = '/api/external/v2/audit-streams/{id}/replay';
    return (await send(`POST ${path}`, (s) => api.POST(path, { params: { path: { id } }, body: { from }, signal: s }))).data;
  },
};
