import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from '../config/load-config.ts';
import type { Store } from '../core/ports.ts';
import { handleFrameworkError, registerErrorHandling } from './plugins/errors.ts';
import { registerMetrics } from './plugins/metrics.ts';
import { registerApiReference, registerOpenApi } from './plugins/openapi.ts';
import { generateRequestId, registerRequestIdHeader } from './plugins/request-id.ts';
import { EXTERNAL_PREFIX, registerTenantAuthentication } from './plugins/tenant.ts';
import { productsRoutes } from './routes/external/products-routes.ts';
import { usersRoutes } from './routes/external/users-routes.ts';
import { operationsRoutes } from './routes/operations-routes.ts';
import { adminRoutes } from './routes/admin/admin-routes.ts';
import { registerIdempotency } from './plugins/idempotency.ts';
import {
  registerHostCheck,
  registerUrlLengthLimit,
  serverLimitOptions,
  withUrlLengthLimit,
} from './plugins/http-limits.ts';
import { registerLoadShedding } from './plugins/load-shedding.ts';
import { registerSecurityHeaders } from './plugins/security-headers.ts';
import { rejectNulCharacters, requireJsonContentType, validatorCompiler } from './validation.ts';
import type { IdempotencyStore } from '../storage/idempotency.queries.ts';

/** Largest accepted request body: 64 KiB (SPEC.md Part B, Errors). */
export const BODY_LIMIT_BYTES = 64 * 1024;

/** What the app runs on, injected so tests and production build it the same way. */
export interface AppDependencies {
  readonly store: Store;
  readonly idempotency: IdempotencyStore;
  /** Resolves when the database answers (for `/readyz`). */
  readonly ping: () => Promise<void>;
  /** Pino options or `false`; defaults to JSON logs at the configured level. */
  readonly logger?: boolean | object;
}

/**
 * Builds the whole Fastify application without listening: request id → tenant and key →
 * route → body parsing → schema validation → handler → core. Source: DESIGN.md.
 */
export async function buildApp(config: Config, deps: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? {
      level: config.logLevel,
      redact: ['req.headers["x-api-key"]', 'req.headers.authorization'],
    },
    genReqId: generateRequestId,
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT_BYTES,
    // Timeouts, header size and a problem+json answer to what Node's parser refuses.
    ...serverLimitOptions(config.http),
    // Requests during shutdown get our problem+json 503 (load-shedding.ts), not Fastify's.
    return503OnClosing: false,
    // Path parameters carry emails of up to 254 characters, percent-encoded up to 3x longer.
    routerOptions: { ignoreTrailingSlash: false, caseSensitive: true, maxParamLength: 1024 },
    // URLs the router rejects (bad percent-encoding, over-long parameter) as problem+json too.
    frameworkErrors: withUrlLengthLimit(config.http.maxUrlLength, handleFrameworkError),
  });
  app.setValidatorCompiler(validatorCompiler);
  // JSON is the only body format of the API: anything else is 415 (SPEC.md Part B, Errors).
  app.removeContentTypeParser(['text/plain']);
  registerRequestIdHeader(app);
  // Cheap refusals first, each with the security headers: URL size, Host, overload, shutdown.
  registerSecurityHeaders(app);
  registerUrlLengthLimit(app, config.http.maxUrlLength);
  registerHostCheck(app);
  await registerLoadShedding(app, config.loadShedding);
  registerErrorHandling(app);
  await registerOpenApi(app, config);
  const metrics = registerMetrics(app);
  registerTenantAuthentication(app, deps.store, config);
  requireJsonContentType(app);
  rejectNulCharacters(app);
  registerIdempotency(app, deps.idempotency);

  await app.register(usersRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store });
  await app.register(productsRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store });
  if (config.adminToken) {
    await app.register(adminRoutes, { prefix: '/admin/v1', store: deps.store, adminToken: config.adminToken });
  }
  await app.register(operationsRoutes, { ping: deps.ping, metrics });
  await registerApiReference(app);
  return app;
}
