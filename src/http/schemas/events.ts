import { Type } from '@sinclair/typebox';
import { EVENT_PAGE, EVENT_TYPES } from '../../core/events/event.ts';
import { ActorSchema, StringEnum } from './common.ts';
import { USER_EXAMPLE, UserSchema } from './users.ts';

/** Query of `GET /events` (docs/contract.md Part B, Events and webhooks). */
export const ListEventsQuery = Type.Object({
  after: Type.Integer({
    minimum: 0,
    // Sequences are below 2^53; a larger `after` would be rounded on the way to JSON and overflow
    // PostgreSQL's bigint past 2^63, so it is refused (400), never rounded (docs/security.md).
    maximum: Number.MAX_SAFE_INTEGER,
    default: 0,
    description: 'Return the events with a `sequence` above this one (0: from the oldest kept; at most 2^53 - 1). Pass the last `sequence` you processed.',
    examples: [0],
  }),
  limit: Type.Integer({
    minimum: 1,
    maximum: EVENT_PAGE.maxLimit,
    default: EVENT_PAGE.defaultLimit,
    description: `Most events to return, 1-${EVENT_PAGE.maxLimit}.`,
    examples: [EVENT_PAGE.defaultLimit],
  }),
});

/** `data` of a user's event: the user after the change, and what it was before. */
const UserEventData = Type.Object(
  {
    user: Type.Ref(UserSchema),
    previous: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'The fields the change altered, with their values before it (absent for `user.created`).' }),
    ),
    reason: Type.Optional(
      StringEnum(['expired', 'inactive', 'grant_expired'], {
        description: 'Why a policy made the change or sends the notice (only on changes and notices of policies).',
      }),
    ),
    ends_at: Type.Optional(
      Type.String({ format: 'date-time', description: 'When access ends (`user.access_expiring`) or was due to end (`user.expiry_deferred`).' }),
    ),
  },
  { title: 'UserEventData', description: 'The `data` of a `user.*` event.' },
);

/** `data` of an audit stream's event (core/audit-streams/stream-events.ts builds it). */
const StreamEventData = Type.Object(
  {
    audit_stream: Type.Object(
      {
        id: Type.String({ format: 'uuid', description: 'The stream\'s id.' }),
        name: Type.String({ description: 'Its name.' }),
        status: StringEnum(['active', 'failing', 'paused'] as const, { description: 'Its status after the event (`paused` for `audit_stream.paused`).' }),
        last_error: Type.Union([Type.String(), Type.Null()], { description: 'What the destination answered to the last failed batch.' }),
        failing_since: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'Since when it failed without a success.' }),
        cursor: Type.Integer({ description: 'The last audit id delivered: resuming continues after it.' }),
      },
      { description: 'The stream, without its destination.' },
    ),
  },
  { title: 'AuditStreamEventData', description: 'The `data` of an `audit_stream.*` event.' },
);

/** An event as the feed lists it and a webhook delivery sends it. */
export const EventSchema = Type.Object(
  {
    id: Type.String({ description: '`evt_` and 32 hex digits; the `webhook-id` of its deliveries, for de-duplication.', examples: ['evt_5f0c6a1e2b3d4c8e9a7f1b2c3d4e5f60'] }),
    type: StringEnum(EVENT_TYPES, { description: 'What happened: to a user (`user.*`), or to one of the workspace\'s audit streams (`audit_stream.*`).' }),
    sequence: Type.Integer({ description: 'Increases strictly within the workspace, in commit order.' }),
    created_at: Type.String({ format: 'date-time', description: 'When the change committed (RFC 3339, UTC).' }),
    workspace: Type.Object({ subdomain: Type.String({ description: 'The workspace\'s subdomain.' }) }),
    actor: Type.Ref(ActorSchema),
    // The responses' serializer does not test this union: it picks the shape by `type`
    // (EVENT_SERIALIZATION_SCHEMA below).
    data: Type.Union([StreamEventData, UserEventData], { description: '`{"user", …}` for `user.*` events, `{"audit_stream"}` for `audit_stream.*` events.' }),
  },
  {
    $id: 'Event',
    description:
      'A user change (docs/contract.md: `user.created`, `user.updated`, `user.deactivated`, `user.reactivated`), a policy\'s ' +
      'notice about a user (`user.expiry_deferred`, `user.access_expiring`), or an audit stream the server paused ' +
      '(`audit_stream.paused`, docs/api.md "Audit streams").',
  },
);

const { data: _documented, ...eventFields } = EventSchema.properties;

/**
 * The Event that response serializers compile in place of {@link EventSchema}: the same fields,
 * with `data` chosen by `type` (an `audit_stream.` prefix or not) instead of the documented
 * union. fast-json-stringify serialises a union by validating the value against each shape in
 * turn, so every user's event had its whole user validated before being written: about half
 * the time of serialising an events page. The JSON written is the same; a `data` of the wrong
 * shape for its `type` throws (a 500), as a value matching neither shape of the union did.
 * Source: docs/contract.md Part B, Events and webhooks (the event's shape per type).
 */
export const EVENT_SERIALIZATION_SCHEMA = {
  ...EventSchema,
  properties: eventFields,
  if: { type: 'object', properties: { type: { type: 'string', pattern: '^audit_stream\\.' } } },
  then: { properties: { data: StreamEventData } },
  else: { properties: { data: UserEventData } },
};

/** The example event of the OpenAPI document. */
export const EVENT_EXAMPLE = {
  id: 'evt_5f0c6a1e2b3d4c8e9a7f1b2c3d4e5f60',
  type: 'user.updated',
  sequence: 42,
  created_at: '2025-01-15T09:31:00.000Z',
  workspace: { subdomain: 'acme' },
  actor: { type: 'api_key', id: '3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30', label: 'provisioning (wum_AbCd1234)' },
  data: { user: { ...USER_EXAMPLE, role: 'owner', updated_at: '2025-01-15T09:31:00.000Z' }, previous: { role: 'non_owner' } },
};
