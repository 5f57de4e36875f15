import { depthLimitedJsonParser } from '../../json-body.ts';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../../core/errors.ts';
import type { Store } from '../../../core/ports.ts';
import { syncHook } from '../../hooks.ts';
import { scimDiscoveryRoutes } from './discovery-routes.ts';
import { scimDocumentRoute } from './document-route.ts';
import { scimGroupsRoutes } from './groups-routes.ts';
import { scimUsersRoutes } from './users-routes.ts';

/** Methods whose SCIM requests carry a body. */
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * The SCIM 2.0 service, registered under `/scim/v2`: bodies in `application/scim+json` or
 * `application/json` (parsed by Fastify's JSON parser, with its protections), a body without
 * a media type refused with 415. Authentication (Bearer key), limits and SCIM error bodies
 * come from the app's tenant plugin and error handler. Source: RFC 7644 §3.1, §3.8;
 * docs/contract.md Part B, SCIM 2.0 provisioning. `server` names the host and port of the
 * document's `servers` entry (`/scim/v2/openapi.json`).
 */
export async function scimRoutes(app: FastifyInstance, options: { store: Store; server: { readonly baseDomain: string; readonly port: number } }): Promise<void> {
  app.addContentTypeParser('application/scim+json', { parseAs: 'string' }, depthLimitedJsonParser(app));
  app.addHook(
    'onRequest',
    syncHook((request) => {
      if (WITH_BODY.has(request.method) && !request.headers['content-type']) {
        throw new AppError('unsupported_media_type', 'Send the body as application/scim+json or application/json.');
      }
    }),
  );
  await app.register(scimDocumentRoute, { server: options.server });
  await app.register(scimDiscoveryRoutes);
  await app.register(scimUsersRoutes, { store: options.store });
  await app.register(scimGroupsRoutes, { store: options.store });
}
