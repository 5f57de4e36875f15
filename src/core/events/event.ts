import type { ActorJson } from '../actor.ts';
import type { UserChangeType, UserNoticeType } from '../users/user.ts';

/**
 * An event about one of the workspace's audit streams rather than a user (docs/api.md, "Audit
 * streams"): `audit_stream.paused` when the server paused a stream that kept failing.
 */
export type StreamEventType = 'audit_stream.paused';

/** Every type of event a workspace's feed holds. */
export type EventType = UserChangeType | UserNoticeType | StreamEventType;

/**
 * One event of a workspace's feed, as stored in the outbox (docs/contract.md Part B, Events and
 * webhooks). `data` is in the API's names: for a user's event `{"user": <the user after the
 * change>, "previous"?: <changed fields before>}`, written by the change's own statement; for a
 * stream's event `{"audit_stream": {…}}` (docs/api.md, "Events and webhooks").
 */
export interface WorkspaceEvent {
  /** `evt_` and 32 hex digits; the `webhook-id` of every delivery of it. */
  readonly id: string;
  readonly type: EventType;
  /** Increases strictly within the workspace, in commit order. */
  readonly sequence: number;
  readonly createdAt: Date;
  readonly subdomain: string;
  readonly data: unknown;
  /** Who made the change (docs/security.md, "Actors"). */
  readonly actor: ActorJson;
}

/** The event types a webhook endpoint can subscribe to. */
export const EVENT_TYPES = [
  'user.created',
  'user.updated',
  'user.deactivated',
  'user.reactivated',
  'user.expiry_deferred',
  'user.access_expiring',
  'audit_stream.paused',
] as const satisfies ReadonlyArray<EventType>;

/** An event written by the domain (not by a user's write statement), with its data in the API's names. */
export interface NewWorkspaceEvent {
  readonly workspaceId: number;
  readonly type: StreamEventType;
  readonly data: Readonly<Record<string, unknown>>;
  readonly actor: ActorJson;
}

/**
 * Appends events to a workspace's outbox (storage/events.queries.ts implements it), inside the
 * caller's transaction, with one webhook delivery per enabled endpoint that wants the type.
 */
export interface EventAppend {
  /**
   * Appends `event` with the workspace's next sequence (so the feed orders it by commit, as a
   * user's) and its deliveries; returns it as stored.
   */
  append(event: NewWorkspaceEvent): Promise<WorkspaceEvent>;
}

/** How long events are kept for the feed, in days (docs/contract.md Part B: "kept 30 days"). */
export const EVENT_RETENTION_DAYS = 30;

/** Default and bounds of `GET /events` (docs/contract.md Part B, Events and webhooks). */
export const EVENT_PAGE = { defaultLimit: 100, maxLimit: 1000 } as const;

/** The event as the feed lists it and webhooks send it: `{id, type, sequence, created_at, workspace: {subdomain}, actor, data}`. */
export interface EventJson {
  readonly id: string;
  readonly type: string;
  readonly sequence: number;
  readonly created_at: string;
  readonly workspace: { readonly subdomain: string };
  readonly actor: ActorJson;
  readonly data: unknown;
}

/**
 * The JSON form of an event (docs/contract.md Part B, Events and webhooks): the body of a webhook
 * delivery and an item of `GET /events`, so both show the same thing.
 */
export function toEventJson(event: WorkspaceEvent): EventJson {
  return {
    id: event.id,
    type: event.type,
    sequence: event.sequence,
    created_at: event.createdAt.toISOString(),
    workspace: { subdomain: event.subdomain },
    actor: event.actor,
    data: event.data,
  };
}
