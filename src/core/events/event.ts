import type { ActorJson } from '../actor.ts';
import type { UserChangeType, UserNoticeType } from '../users/user.ts';

/**
 * One event of a workspace's feed, as stored in the outbox (docs/contract.md Part B, Events and
 * webhooks). `data` is `{"user": <the user after the change>, "previous"?: <changed fields
 * before>}` in the API's names, written by the change's own statement.
 */
export interface WorkspaceEvent {
  /** `evt_` and 32 hex digits; the `webhook-id` of every delivery of it. */
  readonly id: string;
  readonly type: UserChangeType | UserNoticeType;
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
] as const satisfies ReadonlyArray<UserChangeType | UserNoticeType>;

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
