import { toActorJson, type Actor } from '../actor.ts';
import type { NewWorkspaceEvent } from '../events/event.ts';
import type { AuditStream } from './audit-stream.ts';

/**
 * `data.audit_stream` of a stream's event in the workspace's feed (docs/api.md, "Events and
 * webhooks"): the stream's identity and health at the moment of the event, in the API's names,
 * never its destination (whose address a subscriber of every event type need not see).
 */
export interface StreamEventData {
  readonly id: string;
  readonly name: string;
  readonly status: AuditStream['status'];
  readonly last_error: string | null;
  readonly failing_since: string | null;
  readonly cursor: number;
}

/**
 * The `audit_stream.paused` event of a stream the server paused (docs/api.md, "Audit streams"),
 * or undefined for an operator's stream of every workspace: it belongs to no workspace's feed,
 * and its audit row and the metric are what tell of it.
 */
export function streamPausedEvent(stream: AuditStream, actor: Actor): NewWorkspaceEvent | undefined {
  if (stream.workspaceId === null) return undefined;
  const audit_stream: StreamEventData = {
    id: stream.id,
    name: stream.name,
    status: stream.status,
    last_error: stream.lastError,
    failing_since: stream.failingSince?.toISOString() ?? null,
    cursor: stream.cursor,
  };
  return { workspaceId: stream.workspaceId, type: 'audit_stream.paused', data: { audit_stream }, actor: toActorJson(actor) };
}
