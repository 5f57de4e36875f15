import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { toEventJson } from '../../../core/events/event.ts';
import { listEvents } from '../../../core/events/events-service.ts';
import type { Store } from '../../../core/ports.ts';
import { scoped } from '../../route-scopes.ts';
import { tenantOf } from '../../plugins/tenant.ts';
import { EXTERNAL_API_ERRORS, jsonResponse, problemResponses } from '../../schemas/common.ts';
import { EVENT_EXAMPLE, EventSchema, ListEventsQuery } from '../../schemas/events.ts';

/**
 * `GET /events`, the workspace's pull feed of user changes (and of audit streams paused, docs/api.md "Audit streams").
 * Source: docs/contract.md Part B, Events and webhooks.
 */
export async function eventsRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  app.withTypeProvider<TypeBoxTypeProvider>().get('/events', {
    schema: {
      operationId: 'listEvents',
      summary: 'List the workspace\'s events in sequence order',
      description:
        'The user changes of the workspace (and its audit streams the server paused) with a `sequence` above `after`, oldest first, at most `limit`; events are ' +
        'kept 30 days. Follow the feed by passing the last `sequence` you processed as `after` (`next_after` of the ' +
        'previous answer); an empty `events` array means you are up to date. The same events are sent to webhook endpoints.',
      tags: ['events'],
      security: scoped('events:read'),
      querystring: ListEventsQuery,
      response: {
        200: jsonResponse(
          'Events in sequence order, and where to continue.',
          Type.Object({
            events: Type.Array(Type.Ref(EventSchema), { description: 'Oldest first; empty when there is nothing newer.' }),
            next_after: Type.Integer({ description: 'The `after` of the next call: the last sequence listed, or `after` when none was.' }),
          }),
          { events: [EVENT_EXAMPLE], next_after: EVENT_EXAMPLE.sequence },
        ),
        ...problemResponses(...EXTERNAL_API_ERRORS, 'invalid_parameter'),
      },
    },
    handler: async (request) => {
      const { after, limit } = request.query;
      const events = await listEvents(options.store, tenantOf(request).workspace.id, after, limit);
      // `data` was written in the shape EventSchema describes: by the user change's own statement, or by the domain (a stream's event).
      const listed = events.map(toEventJson) as unknown as Array<Static<typeof EventSchema>>;
      return { events: listed, next_after: events.at(-1)?.sequence ?? after };
    },
  });
}
