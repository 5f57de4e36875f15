import { SYSTEM_ACTOR, type Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Repositories, Store } from '../ports.ts';
import type { StreamScope } from './audit-stream-repository.ts';
import { requireWorkspace } from '../workspaces/require-workspace.ts';
import {
  generateStreamSecret,
  joinDestination,
  splitDestination,
  type AuditStream,
  type AuditStreamWithLag,
  type PublicDestination,
  type StreamCredentials,
  type StreamFormat,
} from './audit-stream.ts';
import type { StreamDestination } from './destination.ts';
import { streamPausedEvent } from './stream-events.ts';

/*
 * Audit streams (docs/api.md, "Audit streams"): a workspace's owners stream its audit trail, an
 * operator one workspace's or every workspace's, to their SIEM. Every change is audited in its
 * own transaction; the worker that sends (audit-streams/) only reads what is decided here.
 */

/**
 * Refuses a destination the server must not reach (the outbound guard: docs/security.md,
 * "Outbound connections"), with AppError `validation_failed` naming the field.
 */
export type StreamDestinationCheck = (destination: PublicDestination) => Promise<void>;

/** The formats a stream may be created with now: a format whose renderer this server lacks is refused. */
export type AvailableFormats = ReadonlySet<StreamFormat>;

/** What a test send came to: the destination accepted the row, or why not. */
export type StreamTestOutcome = { readonly ok: true } | { readonly ok: false; readonly error: string };

/** Sends one synthetic row to a stream's destination now, through the worker's senders. */
export type StreamTestSend = (stream: AuditStream, destination: StreamDestination) => Promise<StreamTestOutcome>;

/** The checks a stream's settings pass before they are stored. */
export interface StreamChecks {
  readonly checkDestination: StreamDestinationCheck;
  readonly formats: AvailableFormats;
}

/** What the audit stream routes are given by the composition root: the checks and the test send. */
export interface AuditStreamDependencies extends StreamChecks {
  readonly sendTest: StreamTestSend;
}

/** A stream's settings as a client gives them. */
export interface StreamInput {
  readonly name: string;
  readonly format: StreamFormat;
  readonly actions: readonly string[] | null;
  readonly destination: StreamDestination;
}

/** What a client may change; the credentials of `destination` may be left out to keep the stored ones (same type). */
export interface StreamPatch {
  readonly name?: string;
  readonly format?: StreamFormat;
  readonly actions?: readonly string[] | null;
  readonly destination?: PublicDestination & { readonly token?: string; readonly secretAccessKey?: string };
  readonly status?: 'active' | 'paused';
}

/** Where a call acts: a workspace (its id and subdomain), or the operator (every stream). */
export type StreamOwner = { readonly workspaceId: number } | 'operator';

const scopeOf = (owner: StreamOwner): StreamScope => (owner === 'operator' ? 'all' : { workspaceId: owner.workspaceId });

/** The stream as its audit rows record it: its settings, never its credentials. */
function snapshot(stream: AuditStream) {
  return {
    id: stream.id,
    workspace: stream.workspace,
    name: stream.name,
    format: stream.format,
    actions: stream.actions,
    destination: stream.destination,
    status: stream.status,
  };
}

async function audit(tx: Repositories, actor: Actor, action: string, before: AuditStream | null, after: AuditStream | null, extra?: object): Promise<void> {
  const stream = (after ?? before)!;
  await tx.audit.append({
    workspaceId: stream.workspaceId,
    actor,
    action,
    targetType: 'audit_stream',
    targetId: stream.id,
    before: before && snapshot(before),
    after: after && { ...snapshot(after), ...extra },
  });
}

async function requireStream(tx: Repositories, owner: StreamOwner, id: string, lock = false): Promise<AuditStream> {
  const stream = await tx.auditStreams.find(scopeOf(owner), id, { lock });
  if (!stream) throw new AppError('audit_stream_not_found', `No audit stream ${id}.`);
  return stream;
}

async function withLag(store: Repositories, stream: AuditStream): Promise<AuditStreamWithLag> {
  return { ...stream, lag: await store.auditStreams.lag(stream) };
}

async function checkSettings(checks: StreamChecks, format: StreamFormat | undefined, destination: PublicDestination | undefined): Promise<void> {
  if (format !== undefined && !checks.formats.has(format)) {
    throw new AppError('format_not_available', `The format "${format}" is not available on this server yet.`, [{ field: 'format', message: 'not available' }]);
  }
  if (destination !== undefined) await checks.checkDestination(destination);
}

/**
 * Creates a stream of `workspace` (a subdomain; null: every workspace, the operator's only)
 * whose cursor is the newest audit row now, audited as `audit_stream.created`. Returns it with
 * the `https` destination's signing secret, shown this once.
 * @throws AppError `workspace_not_found` (404); `validation_failed` (400, a refused address);
 *   `format_not_available` (422).
 */
export async function createAuditStream(
  store: Store,
  workspace: { readonly subdomain: string } | null,
  input: StreamInput,
  actor: Actor,
  checks: StreamChecks,
): Promise<{ stream: AuditStreamWithLag; secret?: string }> {
  const secret = input.destination.type === 'https' ? generateStreamSecret() : undefined;
  const { destination, credentials } = splitDestination(input.destination, secret ?? '');
  await checkSettings(checks, input.format, destination);
  const stream = await store.transaction(async (tx) => {
    const workspaceId = workspace === null ? null : (await requireWorkspace(tx, workspace.subdomain)).id;
    const created = await tx.auditStreams.insert({ workspaceId, name: input.name, format: input.format, actions: input.actions, destination, credentials });
    await audit(tx, actor, 'audit_stream.created', null, created);
    return created;
  });
  return { stream: await withLag(store, stream), ...(secret === undefined ? {} : { secret }) };
}

/** Every stream `owner` sees, oldest first, with its lag. */
export async function listAuditStreams(store: Store, owner: StreamOwner): Promise<AuditStreamWithLag[]> {
  const streams = await store.auditStreams.findAll(scopeOf(owner));
  return Promise.all(streams.map((s) => withLag(store, s)));
}

/** One stream with its lag. @throws AppError `audit_stream_not_found` (404). */
export async function getAuditStream(store: Store, owner: StreamOwner, id: string): Promise<AuditStreamWithLag> {
  return withLag(store, await requireStream(store, owner, id));
}

/** The credentials a patch leaves: new ones given, the stored ones kept (same type), or a refusal. */
function patchedCredentials(destination: NonNullable<StreamPatch['destination']>, stored: StreamCredentials): StreamCredentials | undefined {
  const keep = stored.type === destination.type;
  switch (destination.type) {
    case 'https':
      return keep ? undefined : { type: 'https', secret: generateStreamSecret() };
    case 'splunk_hec':
      if (destination.token !== undefined) return { type: 'splunk_hec', token: destination.token };
      break;
    case 's3':
      if (destination.secretAccessKey !== undefined) return { type: 's3', secretAccessKey: destination.secretAccessKey };
      break;
    case 'syslog':
      return { type: 'syslog' };
  }
  if (keep) return undefined;
  const field = destination.type === 's3' ? 'destination.secret_access_key' : 'destination.token';
  throw new AppError('validation_failed', `A new ${destination.type} destination needs its credentials.`, [{ field, message: 'required' }]);
}

/**
 * Changes a stream: name, format, actions, destination (its credentials kept when left out of a
 * destination of the same type), and `status` (`paused`, or `active` to resume from the cursor
 * at once, a failing stream too). Audited as `audit_stream.updated`, and `audit_stream.paused` / `audit_stream.resumed`
 * for a change of status, in the change's transaction.
 * @throws AppError `audit_stream_not_found` (404); `validation_failed` (400); `format_not_available` (422).
 */
export async function updateAuditStream(
  store: Store,
  owner: StreamOwner,
  id: string,
  patch: StreamPatch,
  actor: Actor,
  checks: StreamChecks,
  openSecret: (stored: string) => string,
): Promise<{ stream: AuditStreamWithLag; secret?: string }> {
  const destination = patch.destination && stripCredentials(patch.destination);
  await checkSettings(checks, patch.format, destination);
  let secret: string | undefined;
  const stream = await store.transaction(async (tx) => {
    const before = await requireStream(tx, owner, id, true);
    let credentials: StreamCredentials | undefined;
    if (patch.destination) {
      const stored = JSON.parse(openSecret((await tx.auditStreams.credentials(id))!)) as StreamCredentials;
      credentials = patchedCredentials(patch.destination, stored);
      if (credentials?.type === 'https') secret = credentials.secret;
    }
    const settings = {
      ...(patch.name === undefined ? {} : { name: patch.name }),
      ...(patch.format === undefined ? {} : { format: patch.format }),
      ...(patch.actions === undefined ? {} : { actions: patch.actions }),
      ...(destination === undefined ? {} : { destination }),
      ...(credentials === undefined ? {} : { credentials }),
    };
    // `active` also retries a failing stream at once, its backoff cleared.
    const status = patch.status === undefined || patch.status === before.status ? undefined : patch.status;
    if (Object.keys(settings).length === 0 && status === undefined) return before;
    const after = await tx.auditStreams.update(id, { ...settings, ...(status === undefined ? {} : { status }) });
    if (Object.keys(settings).length > 0) await audit(tx, actor, 'audit_stream.updated', before, after);
    if (status !== undefined) await audit(tx, actor, status === 'paused' ? 'audit_stream.paused' : 'audit_stream.resumed', before, after);
    return after;
  });
  return { stream: await withLag(store, stream), ...(secret === undefined ? {} : { secret }) };
}

/** A patch's destination without the credential fields it may carry. */
function stripCredentials(destination: NonNullable<StreamPatch['destination']>): PublicDestination {
  const { token: _token, secretAccessKey: _key, ...rest } = destination;
  return rest as PublicDestination;
}

/** Deletes a stream, audited as `audit_stream.deleted`. @throws AppError `audit_stream_not_found` (404). */
export async function deleteAuditStream(store: Store, owner: StreamOwner, id: string, actor: Actor): Promise<void> {
  await store.transaction(async (tx) => {
    const before = await requireStream(tx, owner, id, true);
    await tx.auditStreams.delete(id);
    await audit(tx, actor, 'audit_stream.deleted', before, null);
  });
}

/**
 * Sends the stream's rows again from `from`: its cursor moves back to just before the first
 * row at or after `from` (never forward), audited as `audit_stream.replayed`. Returns the stream
 * and the time of the oldest row still kept (rows before it are gone with `AUDIT_RETENTION`).
 * @throws AppError `audit_stream_not_found` (404).
 */
export async function replayAuditStream(
  store: Store,
  owner: StreamOwner,
  id: string,
  from: Date,
  actor: Actor,
): Promise<{ stream: AuditStreamWithLag; oldestKept: Date | null }> {
  const { stream, oldestKept } = await store.transaction(async (tx) => {
    const before = await requireStream(tx, owner, id, true);
    const rewound = await tx.auditStreams.rewind(id, from);
    await audit(tx, actor, 'audit_stream.replayed', before, rewound.stream, { replay_from: from.toISOString() });
    return rewound;
  });
  return { stream: await withLag(store, stream), oldestKept };
}

/**
 * Sends one synthetic row to the stream's destination now and says what came of it; the
 * cursor and the stream's health are left as they are.
 * @throws AppError `audit_stream_not_found` (404).
 */
export async function testAuditStream(store: Store, owner: StreamOwner, id: string, send: StreamTestSend): Promise<StreamTestOutcome> {
  const stream = await requireStream(store, owner, id);
  let credentials: StreamCredentials;
  try {
    credentials = JSON.parse(store.openSecret((await store.auditStreams.credentials(id))!)) as StreamCredentials;
  } catch (error) {
    return { ok: false, error: `the stream's credentials cannot be decrypted with this server's SECRETS_KEY (${(error as Error).message})` };
  }
  return send(stream, joinDestination(stream.destination, credentials));
}

/**
 * Pauses every stream failing for longer than `pauseAfterMs` (`AUDIT_STREAM_PAUSE_AFTER`), each
 * audited as `audit_stream.paused` by the system and, for a workspace's stream, announced by an
 * `audit_stream.paused` event in that workspace's feed and to its webhook endpoints, all in one
 * transaction (docs/api.md, "Audit streams"). Returns the streams paused.
 */
export async function pauseFailingStreams(store: Store, pauseAfterMs: number, now: Date = new Date()): Promise<AuditStream[]> {
  return store.transaction(async (tx) => {
    const paused = await tx.auditStreams.pauseFailing(new Date(now.getTime() - pauseAfterMs));
    for (const stream of paused) {
      await audit(tx, SYSTEM_ACTOR, 'audit_stream.paused', { ...stream, status: 'failing' }, stream, {
        reason: 'failing',
        failing_since: stream.failingSince?.toISOString() ?? null,
        last_error: stream.lastError,
      });
      const event = streamPausedEvent(stream, SYSTEM_ACTOR);
      if (event) await tx.events.append(event);
    }
    return paused;
  });
}
