import { Type } from '@sinclair/typebox';
import { EVENT_TYPES } from '../../core/events/event.ts';
import type { WebhookDelivery, WebhookEndpoint } from '../../core/webhooks/webhook-endpoint.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../../core/webhooks/webhook-endpoint.ts';
import { NullableTimestamp, StringEnum, Timestamp } from './common.ts';

const Url = Type.String({
  minLength: 1,
  maxLength: MAX_WEBHOOK_URL_LENGTH,
  description: 'Where deliveries are POSTed: `https://` (`http://` to loopback only when the service allows it). Private, loopback, link-local and metadata addresses are refused unless the operator allowed them.',
  examples: ['https://hooks.example.com/wum'],
});
const Description = Type.String({ maxLength: 500, description: 'A note for people.', examples: ['Billing seats'] });
const EventTypes = Type.Union([Type.Array(StringEnum(EVENT_TYPES), { minItems: 1, uniqueItems: true }), Type.Null()], {
  description: 'The event types sent to it; null or absent: every type.',
  examples: [['user.created', 'user.deactivated']],
});

/** Body of `POST …/webhook-endpoints`. */
export const CreateWebhookEndpointBody = Type.Object(
  { url: Url, description: Type.Optional(Description), event_types: Type.Optional(EventTypes) },
  { additionalProperties: false, examples: [{ url: 'https://hooks.example.com/wum', description: 'Billing seats', event_types: ['user.created', 'user.deactivated'] }] },
);

/** Body of `PATCH …/webhook-endpoints/{id}`: the fields given are changed. */
export const UpdateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    description: Type.Optional(Description),
    event_types: Type.Optional(EventTypes),
    enabled: Type.Optional(Type.Boolean({ description: '`false` stops deliveries; `true` resumes them (also after the service disabled it).' })),
  },
  { additionalProperties: false, examples: [{ enabled: true }, { url: 'https://hooks.example.com/wum/v2', event_types: null }] },
);

const endpointFields = {
  id: Type.String({ format: 'uuid', description: 'The endpoint\'s id.' }),
  url: Type.String({ description: 'Where deliveries go.' }),
  description: Type.String({ description: 'A note for people.' }),
  event_types: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'The event types sent to it; null: every type.' }),
  enabled: Type.Boolean({ description: 'False while disabled: no new deliveries; pending ones wait.' }),
  disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it is disabled (`failing`: the retry schedule of a delivery ran out).' }),
  previous_secret_expires_at: { ...NullableTimestamp, description: 'Until when the secret replaced by the last rotation still signs (a second signature); null when none does.' },
  created_at: Timestamp,
  updated_at: Timestamp,
};

/** A webhook endpoint on the admin wire (never its secret). */
export const WebhookEndpointSchema = Type.Object(endpointFields, { description: 'A webhook endpoint of the workspace.' });

/** An endpoint with its secret: the answer of create and rotate, the only ones showing it. */
export const WebhookEndpointWithSecretSchema = Type.Object(
  {
    ...endpointFields,
    secret: Type.String({ description: 'The signing secret (`whsec_…`, Standard Webhooks). Shown only in this response; store it now.' }),
  },
  { description: 'A webhook endpoint with its signing secret.' },
);

/** A delivery on the admin wire. */
export const WebhookDeliverySchema = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'The delivery\'s id, to redeliver it.' }),
    event_id: Type.String({ description: 'The event sent: the `webhook-id` header of every attempt.' }),
    event_type: Type.String({ description: 'Its type.' }),
    event_sequence: Type.Integer({ description: 'Its sequence in the workspace.' }),
    status: StringEnum(['pending', 'succeeded', 'failed'], { description: '`pending` until a 2xx (`succeeded`) or the end of the retry schedule (`failed`).' }),
    attempts: Type.Integer({ description: 'Attempts since it was created or last redelivered.' }),
    next_attempt_at: { ...NullableTimestamp, description: 'When it is next attempted; null unless pending.' },
    last_attempt_at: NullableTimestamp,
    last_response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status of the last attempt; null when none answered.' }),
    attempt_log: Type.Array(
      Type.Object({
        attempted_at: Type.String({ format: 'date-time' }),
        response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'The receiver\'s status; null when it did not answer.' }),
        error: Type.Union([Type.String(), Type.Null()], { description: 'Why no answer came (timeout, refused address, network error).' }),
        duration_ms: Type.Integer({ description: 'Time to the answer or the failure, in ms.' }),
      }),
      { description: 'Every attempt, oldest first.' },
    ),
    created_at: Timestamp,
    delivered_at: NullableTimestamp,
  },
  { description: 'One event sent (or to be sent) to the endpoint, with its attempts.' },
);

/** Examples of the webhook routes in the OpenAPI document. */
export const WEBHOOK_EXAMPLES = {
  endpoint: {
    id: '0b8e2d4c-6f1a-4c3b-9e7d-5a2f8c1b3d90',
    url: 'https://hooks.example.com/wum',
    description: 'Billing seats',
    event_types: null,
    enabled: true,
    disabled_reason: null,
    previous_secret_expires_at: null,
    created_at: '2025-01-15T09:00:00.000Z',
    updated_at: '2025-01-15T09:00:00.000Z',
  },
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  delivery: {
    id: '7d3f9a2b-1c4e-4b8a-a6f0-2e9c5d7b1a38',
    event_id: 'evt_5f0c6a1e2b3d4c8e9a7f1b2c3d4e5f60',
    event_type: 'user.created',
    event_sequence: 42,
    status: 'succeeded',
    attempts: 2,
    next_attempt_at: null,
    last_attempt_at: '2025-01-15T09:30:06.000Z',
    last_response_status: 204,
    attempt_log: [
      { attempted_at: '2025-01-15T09:30:00.100Z', response_status: 503, error: null, duration_ms: 41 },
      { attempted_at: '2025-01-15T09:30:06.000Z', response_status: 204, error: null, duration_ms: 12 },
    ],
    created_at: '2025-01-15T09:30:00.000Z',
    delivered_at: '2025-01-15T09:30:06.000Z',
  },
};

/** Domain → wire: an endpoint. */
export const toWireWebhookEndpoint = (e: WebhookEndpoint) => ({
  id: e.id,
  url: e.url,
  description: e.description,
  event_types: e.eventTypes ? [...e.eventTypes] : null,
  enabled: e.enabled,
  disabled_reason: e.disabledReason,
  previous_secret_expires_at: e.previousSecretExpiresAt,
  created_at: e.createdAt,
  updated_at: e.updatedAt,
});

/** Domain → wire: a delivery. */
export const toWireWebhookDelivery = (d: WebhookDelivery) => ({
  id: d.id,
  event_id: d.eventId,
  event_type: d.eventType,
  event_sequence: d.eventSequence,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: d.nextAttemptAt,
  last_attempt_at: d.lastAttemptAt,
  last_response_status: d.lastResponseStatus,
  attempt_log: [...d.attemptLog],
  created_at: d.createdAt,
  delivered_at: d.deliveredAt,
});
