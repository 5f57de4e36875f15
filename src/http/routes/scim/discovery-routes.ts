import type { FastifyInstance } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import { resourceTypes, schemas, serviceProviderConfig } from '../../../scim/discovery.ts';
import { listResponse } from '../../../scim/list.ts';
import { scimBaseUrl, sendScim } from './scim-reply.ts';

/**
 * The discovery endpoints: `/ServiceProviderConfig`, `/ResourceTypes[/{id}]`,
 * `/Schemas[/{id}]`. Source: RFC 7644 §4.
 */
export async function scimDiscoveryRoutes(app: FastifyInstance): Promise<void> {
  const hidden = { schema: { hide: true } };
  app.get('/ServiceProviderConfig', hidden, async (request, reply) => sendScim(reply, 200, serviceProviderConfig(scimBaseUrl(request))));

  for (const [path, documents, what] of [
    ['/ResourceTypes', resourceTypes, 'resource type'],
    ['/Schemas', schemas, 'schema'],
  ] as const) {
    app.get(path, hidden, async (request, reply) => {
      const all = documents(scimBaseUrl(request));
      return sendScim(reply, 200, listResponse(all, all.length, 1));
    });
    app.get(`${path}/:id`, hidden, async (request, reply) => {
      const { id } = request.params as { id: string };
      const found = documents(scimBaseUrl(request)).find((d) => d.id === id);
      if (!found) throw new AppError('not_found', `No ${what} "${id}".`);
      return sendScim(reply, 200, found);
    });
  }
}
