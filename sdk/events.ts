import type { components } from './schema.ts';

/** The type of an event: what happened to a user or an audit stream (the OpenAPI document's `Event.type`). */
export type EventType = components['schemas']['Event']['type'];

/**
 * Every event type, in the service's order: what a webhook endpoint can subscribe to. The
 * compiler holds it to the generated `Event.type` both ways (none missing, none extra), so a
 * new type in the API fails the build until it is listed here.
 */
export const EVENT_TYPES = [
  'user.created',
  'user.updated',
  'user.deactivated',
  'user.reactivated',
  'user.expiry_deferred',
  'user.access_expiring',
  'audit_stream.paused',
] as const satisfies readonly EventType[];

/** Fails to compile when the API has an event type {@link EVENT_TYPES} lacks. */
type Unlisted = Exclude<EventType, (typeof EVENT_TYPES)[number]>;
const everyTypeListed: [Unlisted] extends [never] ? true : never = true;
void everyTypeListed;
