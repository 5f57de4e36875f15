import type { FastifyInstance } from 'fastify';
import { scimOpenApiDocument } from '../../../scim/openapi-document.ts';

/**
 * `GET /scim/v2/openapi.json`: the SCIM service's OpenAPI 3.1 document, public documentation
 * answered on any host without a key (the tenant hook lists it among its public paths), made
 * on the first request. Source: docs/api.md, "SCIM 2.0 provisioning".
 */
export async function scimDocumentRoute(app: FastifyInstance, options: { server: { readonly baseDomain: string; readonly port: number } }): Promise<void> {
  let document: Record<string, unknown> | undefined;
  app.get('/openapi.json', { schema: { hide: true } }, async () => (document ??= scimOpenApiDocument(options.server)));
}
