import swagger, { type StaticDocumentSpec, type SwaggerTransformObject } from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifySchema, type RouteOptions } from 'fastify';
import type { Config } from '../../config/load-config.ts';
import type { ErrorCode } from '../../core/errors.ts';
import { ActorSchema, ProblemSchema, problemResponses } from '../schemas/common.ts';
import { CONSOLE_TAG } from '../schemas/console.ts';
import { PROBLEM_CONTENT_TYPE } from '../problem.ts';
import { ProductSchema } from '../schemas/products.ts';
import { UserSchema } from '../schemas/users.ts';
import { ImportJobSchema } from '../schemas/imports.ts';
import { EventSchema } from '../schemas/events.ts';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from './idempotency.ts';
import { EXTERNAL_PREFIX, subdomainOf } from './tenant.ts';

/** Where the OpenAPI 3.1 document is served (public, any host; a workspace's host gets its own part of it). */
export const OPENAPI_PATH = `${EXTERNAL_PREFIX}/openapi.json`;

/** Where the API reference page and its assets are served (`@fastify/swagger-ui`). */
export const DOCS_PREFIX = '/docs';

/** Where the operator API lives: on a workspace's host it does not exist, so its document leaves it out. */
const ADMIN_PREFIX = '/admin/v1';

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
 * - every route declares the problems answered before any route runs ({@link withTransportProblems});
 * - a query parameter with a default is optional to the client. The schemas list it as
 *   required only so the handler's types are not optional; Ajv fills in the default
 *   (`useDefaults`) before it checks `required`, so a request may always omit it;
 * - routes that honour `Idempotency-Key` (`config.idempotent`) document that header;
 * - a body the route may go without (`config.optionalBody`) is marked so, for {@link describeDocument};
 * - the operator API (`/admin/v1`) names the operator host as its server: on a workspace's host
 *   it does not exist, so a client generated from the document must call another server.
 */
function describeRoute(operatorServers: readonly object[]) {
  return ({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }) => {
    if (!schema) return { schema, url };
    const described = describeSchema(schema, route);
    if (url === ADMIN_PREFIX || url.startsWith(`${ADMIN_PREFIX}/`)) described.servers = operatorServers;
    if (route.config?.optionalBody) described[OPTIONAL_BODY] = true;
    return { schema: described, url };
  };
}

/**
 * Describes a route in the console's document ({@link registerOpenApi}): the console's own
 * routes (hidden from the public document, tagged {@link CONSOLE_TAG}) as {@link describeRoute}
 * describes any route, the operator's sign-in under the operator host's server; every other
 * route stays out of it.
 */
function describeConsoleRoute(operatorServers: readonly object[]) {
  const describe = describeRoute(operatorServers);
  return ({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }) => {
    const own = schema as (FastifySchema & { hide?: boolean; tags?: readonly string[] }) | undefined;
    if (!own?.hide || !own.tags?.includes(CONSOLE_TAG)) return { schema: { hide: true }, url };
    const { hide: _hidden, ...shown } = own;
    const described = describe({ schema: shown, url, route });
    if (url.startsWith(OPERATOR_CONSOLE_PREFIX)) (described.schema as Record<string, unknown>).servers = operatorServers;
    return described;
  };
}

/** The operators' sign-in and session: served on the operator host only. */
const OPERATOR_CONSOLE_PREFIX = '/console/operator/';

/** Marks an operation whose body may be left out; {@link describeDocument} turns it into `requestBody.required: false`. */
const OPTIONAL_BODY = 'x-optional-body';

/** The query defaults and the `Idempotency-Key` header of {@link describeRoute}. */
function describeSchema(schema: FastifySchema, route: RouteOptions): FastifySchema & Record<string, unknown> {
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
  const response = described.response as Record<string, ProblemResponse> | undefined;
  if (response) described.response = withTransportProblems(response, [route.method].flat());
  return described;
}

/** A response as {@link problemResponses} builds it: its examples are keyed by error code. */
type ProblemResponse = { readonly content?: Record<string, { readonly examples?: Record<string, unknown> }> };

/**
 * Problems any route answers before it runs, whatever its own list: a request target it cannot
 * read (`400 bad_request`), one too long (414), header fields too large (431); and, for any
 * method but GET and HEAD (which may carry a body), a body of a media type no parser takes (415).
 */
function withTransportProblems(response: Record<string, ProblemResponse>, methods: readonly string[]): Record<string, ProblemResponse> {
  const mediaType = PROBLEM_CONTENT_TYPE.split(';', 1)[0]!;
  const named = Object.values(response).flatMap((answer) => Object.keys(answer.content?.[mediaType]?.examples ?? {})) as ErrorCode[];
  const transport: ErrorCode[] = ['bad_request', 'uri_too_long', 'request_header_fields_too_large'];
  if (methods.some((method) => method !== 'GET' && method !== 'HEAD')) transport.push('unsupported_media_type');
  if (transport.every((code) => named.includes(code))) return response;
  // Rebuilt from every code it names, so that a status it already had lists the new codes too.
  return { ...response, ...problemResponses(...named, ...transport) };
}

/**
 * The last touches on the whole document: `@fastify/swagger` marks every request body
 * required, so an operation marked {@link OPTIONAL_BODY} gets `requestBody.required: false`.
 */
const describeDocument: SwaggerTransformObject = (documentObject) => {
  if (!('openapiObject' in documentObject)) return documentObject.swaggerObject;
  const { openapiObject } = documentObject;
  for (const item of Object.values(openapiObject.paths ?? {})) {
    for (const operation of Object.values(item ?? {}) as DescribedOperation[]) {
      if (typeof operation !== 'object' || !operation) continue;
      if (OPTIONAL_BODY in operation) {
        delete operation[OPTIONAL_BODY];
        if (operation.requestBody) operation.requestBody.required = false;
      }
      declareCommonHeaders(operation);
    }
  }
  openapiObject.components = { ...openapiObject.components, headers: { ...openapiObject.components?.headers, ...COMMON_HEADERS } };
  return openapiObject;
};

/**
 * The console's document as {@link describeDocument} completes it, without the shared schemas
 * none of its operations reaches (the user, the product, the event…: the public document's).
 */
const describeConsoleDocument: SwaggerTransformObject = (documentObject) => {
  const described = describeDocument(documentObject) as { paths?: unknown; components?: { schemas?: Record<string, unknown> } };
  const schemas = described.components?.schemas;
  if (!schemas) return described as ReturnType<SwaggerTransformObject>;
  const reached = new Set<string>();
  const reach = (value: unknown) => {
    for (const [, name] of JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      if (name === undefined || reached.has(name)) continue;
      reached.add(name);
      reach(schemas[name]);
    }
  };
  reach(described.paths);
  described.components!.schemas = Object.fromEntries(Object.entries(schemas).filter(([name]) => reached.has(name)));
  return described as ReturnType<SwaggerTransformObject>;
};

/** An operation as {@link describeDocument} reads and completes it. */
type DescribedOperation = Record<string, unknown> & {
  requestBody?: { required?: boolean };
  security?: ReadonlyArray<Record<string, unknown>>;
  parameters?: ReadonlyArray<{ in?: string; name?: string }>;
  responses?: Record<string, { headers?: Record<string, unknown> }>;
};

/**
 * The response headers many operations send, declared once in `components.headers` and
 * referenced by each response that carries them (docs/api.md, introduction).
 */
const COMMON_HEADERS = {
  'X-Request-Id': {
    description: 'The request id (the one sent, if valid, else a new one): it names the request in the logs and in its audit rows.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'The caller\'s remaining quota under the per-key limit (IETF draft-ietf-httpapi-ratelimit-headers), e.g. `"per-key";r=99;t=1`.',
    schema: { type: 'string' },
  },
  'RateLimit-Policy': {
    description: 'The per-key limit: the quota and its window in seconds, e.g. `"per-key";q=100;w=1`.',
    schema: { type: 'string' },
  },
  'Idempotent-Replayed': {
    description: '`true` when the answer is the stored first answer to this `Idempotency-Key`, replayed.',
    schema: { type: 'string', const: 'true' },
  },
  'WWW-Authenticate': {
    description: 'The authentication scheme the operation expects (RFC 9110 §11.6.1), on `401`.',
    schema: { type: 'string' },
  },
} as const;

const headerRef = (name: keyof typeof COMMON_HEADERS) => ({ $ref: `#/components/headers/${name}` });

/** Adds references to the {@link COMMON_HEADERS} an operation's answers carry, and the console session as a way in. */
function declareCommonHeaders(operation: DescribedOperation): void {
  const keyed = operation.security?.some((requirement) => 'apiKey' in requirement) ?? false;
  // The console's session stands in for a key or the operator token (docs/security.md, "Console sessions").
  if (operation.security?.some((requirement) => 'apiKey' in requirement || 'adminToken' in requirement)) {
    operation.security = [...operation.security, { consoleSession: [] }];
  }
  const idempotent = operation.parameters?.some((parameter) => parameter.in === 'header' && parameter.name === 'Idempotency-Key') ?? false;
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    if (typeof response !== 'object' || !response || '$ref' in response) continue;
    const headers: Record<string, unknown> = { 'X-Request-Id': headerRef('X-Request-Id') };
    if (keyed) Object.assign(headers, { RateLimit: headerRef('RateLimit'), 'RateLimit-Policy': headerRef('RateLimit-Policy') });
    if (idempotent && !status.startsWith('5')) headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
    if (status === '401') headers['WWW-Authenticate'] = headerRef('WWW-Authenticate');
    response.headers = { ...headers, ...response.headers };
  }
}

/** The ways in the documents declare (the console's document the two its routes use). */
const SECURITY_SCHEMES = {
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Api-Key',
    description:
      'A workspace API key. Its scopes: `users:read`, `users:write`, `products:read`, `events:read`, `scim`, ' +
      '`owners:write` (creating, promoting, reactivating or renaming an owner, beside the operation\'s own scope), ' +
      '`activity:write`, `policies:write`, and the self-service scopes `keys:write`, `sso:write`, `webhooks:write`, ' +
      '`audit:read`; `*` is every scope, present and future. Each operation lists the scope it needs in its security requirement.',
  },
  adminToken: { type: 'http', scheme: 'bearer' },
  consoleSession: {
    type: 'apiKey',
    in: 'cookie',
    name: 'wum_session',
    description:
      'The web console\'s session, set at sign-in (`__Host-wum_session` over https). A signed-in owner may call the ' +
      'workspace\'s operations with every scope, a signed-in operator the operator API; a change must come from the ' +
      'console\'s own origin (else `403 cross_origin_refused`).',
  },
} as const;

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The console's OpenAPI document (its page, sign-ins and sessions, hidden from the public
     * one): built like `swagger()` by a second generator (docs/api.md, "The console's routes").
     */
    consoleSwagger(): Record<string, unknown>;
  }
}

/**
 * Generates the OpenAPI 3.1 document from the route schemas (one source of truth), and the
 * console's own document ({@link describeConsoleRoute}, `app.consoleSwagger()`), and
 * registers the shared schemas they reference. Must run before any route is added.
 */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  const workspaceServer = {
    url: `http://{workspace}.${config.baseDomain}:${config.port}`,
    variables: { workspace: { default: 'demo', description: 'The workspace subdomain.' } },
  };
  const operatorServers = [
    {
      url: `http://{operator_host}:${config.port}`,
      description: 'The operator host: any host that is not a workspace subdomain of the base domain.',
      variables: { operator_host: { default: config.baseDomain, description: 'The host name the operator API is served on.' } },
    },
  ];
  const refResolver = {
    buildLocalReference: (json: { $id?: unknown }, _baseUri: unknown, _fragment: unknown, i: number) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
  };
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
          'Errors are RFC 9457 problem details with a stable `code`. SCIM 2.0 provisioning (`/scim/v2`) is described by its own document, `/scim/v2/openapi.json`.',
      },
      servers: [workspaceServer],
      components: {
        securitySchemes: SECURITY_SCHEMES,
      },
      security: [{ apiKey: [] }],
      tags: [
        { name: 'users', description: 'Users of the workspace' },
        { name: 'products', description: 'Products and their roles' },
        { name: 'events', description: 'The feed of user changes (also sent to webhook endpoints)' },
        { name: 'policies', description: 'Access that ends on time: activity reports, the inactivity and expiry policies' },
        { name: 'api-keys', description: 'The workspace\'s own API keys (self-service, scope `keys:write`)' },
        { name: 'identity-provider', description: 'The workspace\'s identity provider for the console (self-service, scope `sso:write`)' },
        { name: 'webhooks', description: 'The workspace\'s webhook endpoints and deliveries (self-service, scope `webhooks:write`)' },
        { name: 'audit', description: 'The workspace\'s audit trail (self-service, scope `audit:read`)' },
        { name: 'admin', description: 'Operator API (Bearer ADMIN_TOKEN), served on the operator host only' },
      ],
    },
    transform: describeRoute(operatorServers),
    transformObject: describeDocument,
    refResolver,
  });
  // The console's document: a second generator over the same routes, under its own decorator.
  await app.register(swagger, {
    decorator: 'consoleSwagger',
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'wum — the console\'s routes (internal)',
        version: '1.0.0',
        license: { name: 'MIT', identifier: 'MIT' },
        description:
          'The routes only the web console calls: its page, its sign-ins and its sessions. Not part of the API: they may ' +
          'change with the console. Kept out of the public document, checked against this one (docs/api.md, "The console\'s routes").',
      },
      servers: [workspaceServer],
      components: { securitySchemes: { apiKey: SECURITY_SCHEMES.apiKey, consoleSession: SECURITY_SCHEMES.consoleSession } },
      tags: [{ name: CONSOLE_TAG, description: 'The console\'s page, sign-ins and sessions' }],
    },
    transform: describeConsoleRoute(operatorServers),
    transformObject: describeConsoleDocument,
    refResolver,
  });
  for (const schema of [ProblemSchema, ActorSchema, UserSchema, ProductSchema, EventSchema, ImportJobSchema]) app.addSchema(schema);
}

/** The parts of an OpenAPI document that {@link workspaceDocument} filters. */
interface OpenApiDocument {
  readonly paths?: Record<string, unknown>;
  readonly tags?: ReadonlyArray<{ readonly name: string }>;
  readonly components?: { readonly securitySchemes?: Record<string, unknown> };
}

/**
 * The document as a workspace's host serves it: only what that host serves, so without the
 * operator API's paths, its tag and its security scheme (docs/security.md, "Hardening
 * controls"). A new object; `full` is not changed.
 */
export function workspaceDocument<D extends OpenApiDocument>(full: D): D {
  const paths = Object.fromEntries(Object.entries(full.paths ?? {}).filter(([path]) => path !== ADMIN_PREFIX && !path.startsWith(`${ADMIN_PREFIX}/`)));
  const { adminToken: _operatorScheme, ...securitySchemes } = full.components?.securitySchemes ?? {};
  return {
    ...full,
    paths,
    ...(full.tags ? { tags: full.tags.filter((tag) => tag.name !== 'admin') } : {}),
    ...(full.components ? { components: { ...full.components, securitySchemes } } : {}),
  };
}

/** Headers of the reference app's answers that belong to its own connection, not to ours. */
const HOP_HEADERS = new Set(['content-length', 'connection', 'keep-alive', 'transfer-encoding', 'date']);

/**
 * An app of its own serving only the API reference viewer (`@fastify/swagger-ui`, Swagger UI's
 * page and its static assets from disk), made when first needed so that a process that never
 * serves `/docs` does not load the viewer (docs/performance.md, "The embedded store"). The
 * viewer shows `document`: it is given to `@fastify/swagger` in its static mode, which the
 * viewer's plugin requires, and which the viewer also serves as `/docs/json` and `/docs/yaml`.
 */
async function buildReferenceApp(document: StaticDocumentSpec['document']): Promise<FastifyInstance> {
  const { default: swaggerUi } = await import('@fastify/swagger-ui');
  const reference = Fastify({ logger: false, routerOptions: { ignoreTrailingSlash: false } });
  await reference.register(swagger, { mode: 'static', specification: { document } });
  await reference.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    theme: { title: 'wum API reference' },
    // No "Try it out": the page's CSP lets it fetch only from its own origin, and the API is on
    // each workspace's host.
    // BaseLayout: the document alone, without the top bar (its logo and a box to load another URL).
    uiConfig: { layout: 'BaseLayout', supportedSubmitMethods: [], docExpansion: 'list', defaultModelsExpandDepth: 0 },
  });
  await reference.ready();
  return reference;
}

/** True when an answer of the viewer is text (HTML, CSS, JavaScript, JSON, a redirect), sent as a string. */
function isText(contentType: string | undefined): boolean {
  return contentType === undefined || /^(text\/|application\/(javascript|json|x-yaml))/i.test(contentType);
}

/**
 * Serves the document and a readable API reference page at `/docs` (assets served locally).
 * `/docs` and everything under it are answered by the viewer's own app ({@link
 * buildReferenceApp}, made on the first such request), through these routes of ours, so that
 * they pass through our hooks (request id, security headers and the page's CSP) as before; a
 * path the viewer does not serve is our 404 problem. The operator host (any host that is not
 * `<label>.<baseDomain>`) gets the whole document; a workspace's host the part it serves
 * ({@link workspaceDocument}), through a viewer of its own.
 */
export async function registerApiReference(app: FastifyInstance, baseDomain: string): Promise<void> {
  // The JSON document (the swagger plugin types its answer as the YAML string too).
  const full = () => app.swagger() as OpenApiDocument;
  let workspaceView: OpenApiDocument | undefined;
  const documentFor = (request: FastifyRequest): OpenApiDocument =>
    subdomainOf(request.hostname, baseDomain) === undefined ? full() : (workspaceView ??= workspaceDocument(full()));
  app.get(OPENAPI_PATH, { schema: { hide: true }, config: { otherMethods: false } }, async (request) => documentFor(request));
  const references = new Map<object, Promise<FastifyInstance>>();
  const relay = async (request: FastifyRequest, reply: FastifyReply) => {
    const document = documentFor(request);
    let reference = references.get(document);
    // A 3.1 document: the static mode serves it as it is, though its type names only 2.0 and 3.0.
    if (!reference) references.set(document, (reference = buildReferenceApp(document as unknown as StaticDocumentSpec['document'])));
    const answer = await (await reference).inject({ method: 'GET', url: request.url, headers: { host: request.headers.host ?? 'localhost' } });
    if (answer.statusCode === 404) return reply.callNotFound();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !HOP_HEADERS.has(name)) reply.header(name, value);
    }
    // Text as a string (the page policy reads the HTML), images as the bytes they are.
    const type = answer.headers['content-type'];
    return reply.code(answer.statusCode).send(isText(typeof type === 'string' ? type : undefined) ? answer.payload : answer.rawPayload);
  };
  for (const url of [DOCS_PREFIX, `${DOCS_PREFIX}/`, `${DOCS_PREFIX}/*`]) app.get(url, { schema: { hide: true }, logLevel: 'warn', config: { otherMethods: false } }, relay);
  app.addHook('onClose', async () => {
    for (const reference of references.values()) await (await reference).close();
  });
}
