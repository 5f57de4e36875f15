import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../../core/ports.ts';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  redeliverWebhook,
  rotateWebhookSecret,
  updateWebhookEndpoint,
  type EndpointWithSecret,
  type WebhookUrlCheck,
} from '../../../core/webhooks/webhook-endpoints-service.ts';
import type { WebhookEndpointChanges } from '../../../core/webhooks/webhook-endpoint.ts';
import { ADMIN_EXAMPLES, AdminPageQuery, pageOf } from '../../schemas/admin.ts';
import { BODY_ERRORS, LinkHeader, jsonResponse, problemResponses } from '../../schemas/common.ts';
import {
  CreateWebhookEndpointBody,
  UpdateWebhookEndpointBody,
  WEBHOOK_EXAMPLES,
  WebhookDeliverySchema,
  WebhookEndpointSchema,
  WebhookEndpointWithSecretSchema,
  toWireWebhookDelivery,
  toWireWebhookEndpoint,
} from '../../schemas/webhooks.ts';
import { listed } from './admin-common.ts';
import type { RouteMount } from '../route-mount.ts';

const { endpoint, secret, delivery } = WEBHOOK_EXAMPLES;
const EndpointId = Type.String({ description: 'The endpoint\'s id.', examples: [endpoint.id] });
const DeliveryId = Type.String({ description: 'The delivery\'s id.', examples: [delivery.id] });

const withSecret = ({ endpoint: e, secret: s }: EndpointWithSecret) => ({ ...toWireWebhookEndpoint(e), secret: s });

/**
 * Routes of a workspace's webhook endpoints: create (the secret shown once), list, get, update,
 * delete, rotate the secret, list an endpoint's deliveries, redeliver one; mounted in the
 * operator API and, for the scope `webhooks:write`, in the workspace's own (docs/api.md,
 * "Self-service"). Every change is audited. Source: docs/contract.md Part B, Events and webhooks.
 */
export async function webhookEndpointsRoutes(app: FastifyInstance, options: { store: Store; checkUrl: WebhookUrlCheck; mount: RouteMount }): Promise<void> {
  const { store, checkUrl, mount } = options;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const BASE = `${mount.base}/webhook-endpoints`;
  const SubdomainParams = Type.Object(mount.params);
  const EndpointParams = Type.Object({ ...mount.params, id: EndpointId });
  const DeliveryParams = Type.Object({ ...mount.params, id: EndpointId, delivery_id: DeliveryId });
  const NOT_FOUND = [...mount.errors, 'webhook_endpoint_not_found'] as const;
  const security = mount.security('webhooks:write');
  const tags = mount.tags('webhooks');

  api.post(BASE, {
    schema: {
      operationId: mount.pick('createWebhookEndpoint', 'createOwnWebhookEndpoint'),
      summary: 'Create a webhook endpoint (its secret is shown only in this response)',
      description:
        'Adds an endpoint that receives the workspace\'s events (all types, or `event_types`) as Standard Webhooks ' +
        'deliveries signed with the returned `secret`. The URL is refused (`400 validation_failed`, field `url`) unless ' +
        'it is `https://` to a public address (see the service\'s SSRF rules).',
      tags,
      security,
      params: SubdomainParams,
      body: CreateWebhookEndpointBody,
      response: {
        201: jsonResponse('The new endpoint with its secret, shown only here.', WebhookEndpointWithSecretSchema, { ...endpoint, secret }),
        ...problemResponses(...mount.errors, ...BODY_ERRORS),
      },
    },
    handler: async (request, reply) => {
      const body = request.body;
      const created = await createWebhookEndpoint(
        store,
        mount.subdomain(request),
        {
          url: body.url,
          ...(body.description === undefined ? {} : { description: body.description }),
          ...(body.event_types === undefined ? {} : { eventTypes: body.event_types }),
        },
        mount.actor(request),
        checkUrl,
      );
      return reply.code(201).send(withSecret(created));
    },
  });

  api.get(BASE, {
    schema: {
      operationId: mount.pick('listWebhookEndpoints', 'listOwnWebhookEndpoints'),
      summary: "List a workspace's webhook endpoints (never their secrets)",
      description: 'Every endpoint of the workspace, oldest first.',
      tags,
      security,
      params: SubdomainParams,
      response: {
        200: jsonResponse(
          'The workspace\'s endpoints.',
          Type.Object({ webhook_endpoints: Type.Array(WebhookEndpointSchema, { description: 'Oldest first.' }) }),
          { webhook_endpoints: [endpoint] },
        ),
        ...problemResponses(...mount.errors),
      },
    },
    handler: async (request) => ({
      webhook_endpoints: (await listWebhookEndpoints(store, mount.subdomain(request))).map(toWireWebhookEndpoint),
    }),
  });

  api.get(`${BASE}/:id`, {
    schema: {
      operationId: mount.pick('getWebhookEndpoint', 'getOwnWebhookEndpoint'),
      summary: 'Get a webhook endpoint',
      description: 'The endpoint, without its secret.',
      tags,
      security,
      params: EndpointParams,
      response: { 200: jsonResponse('The endpoint.', WebhookEndpointSchema, endpoint), ...problemResponses(...NOT_FOUND) },
    },
    handler: async (request) => toWireWebhookEndpoint(await getWebhookEndpoint(store, mount.subdomain(request), request.params.id)),
  });

  api.patch(`${BASE}/:id`, {
    schema: {
      operationId: mount.pick('updateWebhookEndpoint', 'updateOwnWebhookEndpoint'),
      summary: 'Change a webhook endpoint',
      description:
        'Changes the fields given: `url` (checked as on creation), `description`, `event_types` (null: every type), ' +
        '`enabled` (`true` re-enables an endpoint the service disabled, and its pending deliveries resume).',
      tags,
      security,
      params: EndpointParams,
      body: UpdateWebhookEndpointBody,
      response: {
        200: jsonResponse('The endpoint after the change.', WebhookEndpointSchema, endpoint),
        ...problemResponses(...NOT_FOUND, ...BODY_ERRORS),
      },
    },
    handler: async (request) => {
      const body = request.body;
      const changes: WebhookEndpointChanges = {
        ...(body.url === undefined ? {} : { url: body.url }),
        ...(body.description === undefined ? {} : { description: body.description }),
        ...(body.event_types === undefined ? {} : { eventTypes: body.event_types }),
        ...(body.enabled === undefined ? {} : { enabled: body.enabled }),
      };
      const updated = await updateWebhookEndpoint(store, mount.subdomain(request), request.params.id, changes, mount.actor(request), checkUrl);
      return toWireWebhookEndpoint(updated);
    },
  });

  api.delete(`${BASE}/:id`, {
    schema: {
      operationId: mount.pick('deleteWebhookEndpoint', 'deleteOwnWebhookEndpoint'),
      summary: 'Delete a webhook endpoint and its deliveries',
      description: 'Removes the endpoint at once: nothing more is sent to it, and its delivery history goes with it.',
      tags,
      security,
      params: EndpointParams,
      response: { 204: { type: 'null', description: 'Deleted.' }, ...problemResponses(...NOT_FOUND) },
    },
    handler: async (request, reply) => {
      await deleteWebhookEndpoint(store, mount.subdomain(request), request.params.id, mount.actor(request));
      return reply.code(204).send();
    },
  });

  api.post(`${BASE}/:id/rotate-secret`, {
    schema: {
      operationId: mount.pick('rotateWebhookSecret', 'rotateOwnWebhookSecret'),
      summary: 'Rotate a webhook endpoint\'s secret (the new one is shown only in this response)',
      description:
        'Gives the endpoint a new secret. For 24 hours deliveries carry two signatures, one by the new secret and one ' +
        'by the old, so the receiver can switch over without rejecting a delivery.',
      tags,
      security,
      params: EndpointParams,
      response: {
        200: jsonResponse('The endpoint with its new secret, shown only here.', WebhookEndpointWithSecretSchema, {
          ...endpoint,
          previous_secret_expires_at: '2025-01-16T09:00:00.000Z',
          secret,
        }),
        ...problemResponses(...NOT_FOUND),
      },
    },
    handler: async (request) => withSecret(await rotateWebhookSecret(store, mount.subdomain(request), request.params.id, mount.actor(request))),
  });

  api.get(`${BASE}/:id/deliveries`, {
    schema: {
      operationId: mount.pick('listWebhookDeliveries', 'listOwnWebhookDeliveries'),
      summary: "List a webhook endpoint's deliveries, newest first",
      description: 'Each event sent (or to be sent) to the endpoint, with its status and every attempt\'s time, response status and error.',
      tags,
      security,
      params: EndpointParams,
      querystring: AdminPageQuery,
      response: {
        200: jsonResponse(
          'A page of deliveries with its pagination envelope.',
          pageOf('deliveries', WebhookDeliverySchema, 'newest first'),
          { deliveries: [delivery], ...ADMIN_EXAMPLES.page(1) },
          { Link: LinkHeader },
        ),
        ...problemResponses(...NOT_FOUND, 'invalid_parameter'),
      },
    },
    handler: async (request, reply) => {
      const { page_number: pageNumber, page_size: pageSize } = request.query;
      const page = await listWebhookDeliveries(store, mount.subdomain(request), request.params.id, { pageNumber, pageSize });
      return listed(request, reply, 'deliveries', page, toWireWebhookDelivery);
    },
  });

  api.post(`${BASE}/:id/deliveries/:delivery_id/redeliver`, {
    schema: {
      operationId: mount.pick('redeliverWebhook', 'redeliverOwnWebhook'),
      summary: 'Send a delivery again',
      description:
        'Makes the delivery pending again, due now, with a fresh retry schedule; it is sent with the same `webhook-id` ' +
        '(the event id), so a receiver that already has it can tell.',
      tags,
      security,
      params: DeliveryParams,
      response: {
        202: jsonResponse('The delivery, pending again.', WebhookDeliverySchema, {
          ...delivery,
          status: 'pending',
          attempts: 0,
          next_attempt_at: '2025-01-15T10:00:00.000Z',
          delivered_at: null,
        }),
        ...problemResponses(...NOT_FOUND, 'webhook_delivery_not_found', 'webhook_endpoint_disabled'),
      },
    },
    handler: async (request, reply) => {
      const { id, delivery_id: deliveryId } = request.params;
      const redelivered = await redeliverWebhook(store, mount.subdomain(request), id, deliveryId, mount.actor(request));
      return reply.code(202).send(toWireWebhookDelivery(redelivered));
    },
  });
}
