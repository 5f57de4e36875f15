/*
 * Audit streams (docs/api.md, "Audit streams"): the audit trail sent, as it is written, to a
 * SIEM (`https` JSON Lines, Splunk HEC, S3, syslog over TLS), with each stream's health.
 * The workspace API (`/api/external/v2/audit-streams`, scope `audit:write`) and the operator
 * API (`/admin/v1/audit-streams`) serve the same routes with the same shapes (one route
 * module mounted twice), so one implementation serves both clients; only the operator's
 * create may name the workspace.
 */
import type { operations } from './schema.ts';
import type { Transport } from './transport.ts';

type Json<Op extends keyof operations, Status extends keyof operations[Op]['responses']> =
  operations[Op]['responses'][Status] extends { content: { 'application/json': infer Body } } ? Body : never;
type Body<Op extends keyof operations> = operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

/** An audit stream: its settings (never its credentials) and health (`status`, `lag_rows`, `lag_seconds`, `last_delivered_at`, `last_error`). */
export type AuditStream = Json<'getOwnAuditStream', 200>;
/** A stream with the signing `secret` of an `https` destination, shown only by the create (or a change to a new https destination). */
export type AuditStreamWithSecret = Json<'createOwnAuditStream', 201>;
/** What a workspace's stream is made with: `name`, `format` (`json` or `ocsf`), optional `actions`, and `destination`. */
export type NewAuditStream = Body<'createOwnAuditStream'>;
/** What an operator's stream is made with: as {@link NewAuditStream}, plus `workspace` (a subdomain; null or absent: every workspace). */
export type NewOperatorAuditStream = Body<'createAuditStream'>;
/** Where a stream sends: `https` (`url`), `splunk_hec` (`url`, `token`), `s3` (`region`, `bucket`, keys, …) or `syslog` (`host`, `port`, …). */
export type AuditStreamDestination = NewAuditStream['destination'];
/** The fields a change sets: any of `name`, `format`, `actions`, `destination` (credentials may be left out to keep them), `status`. */
export type AuditStreamChanges = Body<'updateOwnAuditStream'>;
/** The answer of a replay: the stream after the rewind, `oldest_kept_at`, and `complete` (false when retention removed rows after `from`). */
export type AuditStreamReplay = Json<'replayOwnAuditStream', 200>;
/** What the destination answered to a test send: `ok`, and `error` when it refused. */
export type AuditStreamTestOutcome = Json<'testOwnAuditStream', 200>;

/** Audit streams of a workspace (its own API) or of the operator (every workspace's); `New` is what a create takes. */
export interface AuditStreamsApi<New extends NewAuditStream = NewAuditStream> {
  /**
   * Creates a stream; it sends the audit rows written from now on (its own
   * `audit_stream.created` first). An `https` destination's signing `secret` (`whsec_…`) is in
   * the result only. Not retried after a network failure.
   * @throws WumApiError `validation_failed` (400: a destination the outbound guard refuses, a bad field); `format_not_available` (422); `workspace_not_found` (404, operator).
   */
  create(stream: New): Promise<AuditStreamWithSecret>;
  /** Every stream with its health, oldest first (the API answers them all at once). */
  list(): Promise<AuditStream[]>;
  /** Every stream, one at a time, as {@link list} reads them. */
  iterate(): AsyncGenerator<AuditStream, void, undefined>;
  /** One stream and its health. @throws WumApiError `audit_stream_not_found` (404). */
  get(id: string): Promise<AuditStream>;
  /**
   * Changes the fields given; a new destination replaces the old one (its credentials may be
   * left out to keep the stored ones when the type stays). `secret` is in the result when it
   * changed to a new `https` destination.
   * @throws WumApiError `audit_stream_not_found` (404); `validation_failed` (400).
   */
  update(id: string, changes: AuditStreamChanges): Promise<AuditStreamWithSecret>;
  /** Stops sending (`status: "paused"`); the cursor stays, so nothing is lost while retention keeps the rows. @throws WumApiError `audit_stream_not_found` (404). */
  pause(id: string): Promise<AuditStream>;
  /** Sends again from the cursor at once (`status: "active"`), also after the service paused a failing stream. @throws WumApiError `audit_stream_not_found` (404). */
  resume(id: string): Promise<AuditStream>;
  /** Deletes a stream (a batch in flight may still arrive). Not retried after a network failure. @throws WumApiError `audit_stream_not_found` (404). */
  delete(id: string): Promise<void>;
  /** Sends one synthetic row (`audit_stream.test`, id 0) now; the cursor and health are untouched. @throws WumApiError `audit_stream_not_found` (404). */
  test(id: string): Promise<AuditStreamTestOutcome>;
  /**
   * Moves the cursor back to just before the first row at or after `from` (never forward): those
   * rows are sent again, in order.
   * @param from - an instant (a `Date`, or an RFC 3339 string with a time zone).
   * @throws WumApiError `audit_stream_not_found` (404); `validation_failed` (400: not an RFC 3339 instant).
   */
  replay(id: string, from: Date | string): Promise<AuditStreamReplay>;
}

/**
 * The audit streams over a client's transport, at `root` (`/api/external/v2` or `/admin/v1`).
 * Reads, changes, tests and replays are retried after a network failure (repeating them changes
 * nothing more, or only resends rows, which a stream's receiver de-duplicates by audit id);
 * creates and deletes are not.
 */
export function auditStreamsApi<New extends NewAuditStream>({ api, call }: Transport, root: '/api/external/v2' | '/admin/v1'): AuditStreamsApi<New> {
  // The operator's paths have the workspace API's shapes (see the header); typed by the latter.
  const base = `${root}/audit-streams` as '/api/external/v2/audit-streams';
  const one = `${base}/{id}` as '/api/external/v2/audit-streams/{id}';
  const at = (id: string) => `${base}/${encodeURIComponent(id)}`;
  const safe = { replayable: true };
  const once = { replayable: false };
  const streams: AuditStreamsApi<New> = {
    async create(body) {
      const { data } = await call(`POST ${base}`, once, (signal) => api.POST(base, { body, signal }));
      return data!;
    },
    async list() {
      const { data } = await call(`GET ${base}`, safe, (signal) => api.GET(base, { signal }));
      return data!.audit_streams;
    },
    async *iterate() {
      yield* await streams.list();
    },
    async get(id) {
      const { data } = await call(`GET ${at(id)}`, safe, (signal) => api.GET(one, { params: { path: { id } }, signal }));
      return data!;
    },
    async update(id, body) {
      const { data } = await call(`PATCH ${at(id)}`, safe, (signal) => api.PATCH(one, { params: { path: { id } }, body, signal }));
      return data!;
    },
    pause: (id) => streams.update(id, { status: 'paused' }),
    resume: (id) => streams.update(id, { status: 'active' }),
    async delete(id) {
      await call(`DELETE ${at(id)}`, once, (signal) => api.DELETE(one, { params: { path: { id } }, signal }));
    },
    async test(id) {
      const path = `${one}/test` as '/api/external/v2/audit-streams/{id}/test';
      const { data } = await call(`POST ${at(id)}/test`, safe, (signal) => api.POST(path, { params: { path: { id } }, signal }));
      return data!;
    },
    async replay(id, from) {
      const path = `${one}/replay` as '/api/external/v2/audit-streams/{id}/replay';
      const body = { from: from instanceof Date ? from.toISOString() : from };
      const { data } = await call(`POST ${at(id)}/replay`, safe, (signal) => api.POST(path, { params: { path: { id } }, body, signal }));
      return data!;
    },
  };
  return streams;
}
