import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config/load-config.ts';
import { ProblemSchema } from '../schemas/common.ts';
import { ProductSchema } from '../schemas/products.ts';
import { UserSchema } from '../schemas/users.ts';
import { EXTERNAL_PREFIX } from './tenant.ts';

/** Where the OpenAPI 3.1 document is served (public, any host). */
export const OPENAPI_PATH = `${EXTERNAL_PREFIX}/openapi.json`;

/**
 * Generates the OpenAPI 3.1 document from the route schemas (one source of truth) and
 * registers the shared schemas it references. Must run before any route is added.
 */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'wum — workspace user management',
        version: '1.0.0',
        description:
          'Add, deactivate, reactivate and list the users of a workspace. Every external request goes to the ' +
          "workspace's own host (`{workspace}.<base domain>`) and carries an `X-Api-Key` of that workspace. " +
          'Errors are RFC 9457 problem details with a stable `code`.',
      },
      servers: [
        {
          url: `http://{workspace}.${config.baseDomain}:${config.port}`,
          variables: { workspace: { default: 'demo', description: 'The workspace subdomain.' } },
        },
      ],
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
          adminToken: { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ apiKey: [] }],
      tags: [
        { name: 'users', description: 'Users of the workspace' },
        { name: 'products', description: 'Products and their roles' },
        { name: 'admin', description: 'Operator API (Bearer ADMIN_TOKEN), served on any host' },
      ],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  for (const schema of [ProblemSchema, UserSchema, ProductSchema]) app.addSchema(schema);
}

/** Serves the document and a readable API reference page at `/docs` (assets served locally). */
export async function registerApiReference(app: FastifyInstance): Promise<void> {
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
  await app.register(scalar, {
    routePrefix: '/docs',
    configuration: { url: OPENAPI_PATH, title: 'wum API reference' },
    logLevel: 'warn',
  });
}
