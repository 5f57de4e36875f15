import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifySchema, type RouteOptions } from 'fastify';
import type { Config } from '../../config/load-config.ts';
import { ActorSchema, ProblemSchema } from '../schemas/common.ts';
import { ProductSchema } from '../schemas/products.ts';
import { UserSchema } from '../schemas/users.ts';
import { EventSchema } from '../schemas/events.ts';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from './idempotency.ts';
import { EXTERNAL_PREFIX } from './tenant.ts';

/** Where the OpenAPI 3.1 document is served (public, any host). */
export const OPENAPI_PATH = `${EXTERNAL_PREFIX}/openapi.json`;

/** Where the API reference page and its script are served (`@scalar/fastify-api-reference`). */
export const DOCS_PREFIX = '/docs';

/** The `Idempotency-Key` request header of routes marked `config.idempotent`, as documented. */
const IdempotencyKeyHeaders = {
  type: 'object',
  properties: {
    'Idempotency-Key': {
      type: 'string',
      minLength: 1,
      maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
      description:
        'Makes a retry safe: the first response is kept 24 h and replayed, with `Idempotent-Replayed: true`, to a ' +
        'retry with the same key and the same request (the same key on another request → `422 ' +
        'idempotency_key_reused`; while the first runs → `409 idempotency_key_in_use`). Use a fresh random value per operation.',
      examples: ['5f0c6f1e-2d4b-4a8e-9b7a-3c1d2e4f6a8b'],
    },
  },
} as const;

/**
 * Describes a route in the document the way clients see it, without touching the schemas the
 * route validates with (it returns copies):
 * - a query parameter with a default is optional to the client. The schemas list it as
 *   required only so the handler's types are not optional; Ajv fills in the default
 *   (`useDefaults`) before it checks `required`, so a request may always omit it;
 * - routes that honour `Idempotency-Key` (`config.idempotent`) document that header.
 */
function describeRoute({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }) {
  if (!schema) return { schema, url };
  let described: FastifySchema & Record<string, unknown> = { ...schema };
  const query = schema.querystring as { properties?: Record<string, { default?: unknown }>; required?: string[] } | undefined;
  if (query?.properties && query.required) {
    const properties = query.properties;
    described.querystring = { ...query, required: query.required.filter((name) => properties[name]?.default === undefined) };
  }
  if (route.config?.idempotent) {
    // Beside the route's own headers (e.g. If-Match), not instead of them.
    const own = schema.headers as { properties?: Record<string, unknown> } | undefined;
    described = {
      ...described,
      headers: { ...IdempotencyKeyHeaders, properties: { ...own?.properties, ...IdempotencyKeyHeaders.properties } },
    };
  }
  return { schema: described, url };
}

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
        license: { name: 'MIT', identifier: 'MIT' },
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
        { name: 'events', description: 'The feed of user changes (also sent to webhook endpoints)' },
        { name: 'admin', description: 'Operator API (Bearer ADMIN_TOKEN), served on any host' },
      ],
    },
    transform: describeRoute,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  for (const schema of [ProblemSchema, ActorSchema, UserSchema, ProductSchema, EventSchema]) app.addSchema(schema);
}

/** Headers of the reference app's answers that belong to its own connection, not to ours. */
const HOP_HEADERS = new Set(['content-length', 'connection', 'keep-alive', 'transfer-encoding', 'date']);

/**
 * An app of its own serving only the API reference viewer (`@scalar/fastify-api-reference`),
 * imported when first needed. The viewer's module holds its 4.4 MB browser bundle as one string:
 * loading it at start cost about 50 MB of memory and a fifth of a second in every process,
 * most of which never serves `/docs` (docs/performance.md, "The embedded store").
 */
async function buildReferenceApp(): Promise<FastifyInstance> {
  const { default: scalar } = await import('@scalar/fastify-api-reference');
  const reference = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: false } });
  await reference.register(scalar, {
    routePrefix: DOCS_PREFIX,
    // System fonts: the page must not depend on a font CDN (and the CSP blocks one).
    configuration: { url: OPENAPI_PATH, title: 'wum API reference', withDefaultFonts: false },
  });
  await reference.ready();
  return reference;
}

/**
 * Serves the document and a readable API reference page at `/docs` (assets served locally).
 * `/docs` and everything under it are answered by the viewer's own app ({@link
 * buildReferenceApp}, made on the first such request), through these routes of ours, so that
 * they pass through our hooks (request id, security headers and the page's CSP) as before; a
 * path the viewer does not serve is our 404 problem.
 */
export async function registerApiReference(app: FastifyInstance): Promise<void> {
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
  let reference: Promise<FastifyInstance> | undefined;
  const relay = async (request: FastifyRequest, reply: FastifyReply) => {
    reference ??= buildReferenceApp();
    const answer = await (await reference).inject({ method: 'GET', url: request.url, headers: { host: request.headers.host ?? 'localhost' } });
    if (answer.statusCode === 404) return reply.callNotFound();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !HOP_HEADERS.has(name)) reply.header(name, value);
    }
    // Text (HTML, JavaScript, a redirect), as the viewer sends it: the page policy hashes the HTML.
    return reply.code(answer.statusCode).send(answer.payload);
  };
  for (const url of [DOCS_PREFIX, `${DOCS_PREFIX}/`, `${DOCS_PREFIX}/*`]) app.get(url, { schema: { hide: true }, logLevel: 'warn' }, relay);
  app.addHook('onClose', async () => {
    if (reference) await (await reference).close();
  });
}
