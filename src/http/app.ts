import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from '../config/load-config.ts';
import type { Store } from '../core/ports.ts';
import type { AuditStreamDependencies } from '../core/audit-streams/audit-streams-service.ts';
import { AppError } from '../core/errors.ts';
import { handleFrameworkError, registerErrorHandling } from './plugins/errors.ts';
import { registerMetrics } from './plugins/metrics.ts';
import { registerConnectionLimits } from './plugins/connection-limits.ts';
import { LOG_SERIALIZERS } from './log-serializers.ts';
import { resilientStdout } from './log-destination.ts';
import { RequestLogController } from './request-log.ts';
import { registerApiReference, registerOpenApi } from './plugins/openapi.ts';
import { generateRequestId, setRequestIdHeader } from './plugins/request-id.ts';
import { EXTERNAL_PREFIX, registerTenantAuthentication } from './plugins/tenant.ts';
import { productsRoutes } from './routes/external/products-routes.ts';
import { usersRoutes } from './routes/external/users-routes.ts';
import { importsRoutes } from './routes/external/imports-routes.ts';
import { activityRoutes, policiesRoutes } from './routes/external/lifecycle-routes.ts';
import { selfServiceRoutes } from './routes/external/self-service-routes.ts';
import { WORKSPACE_MOUNT } from './routes/route-mount.ts';
import { eventsRoutes } from './routes/external/events-routes.ts';
import { scimRoutes } from './routes/scim/scim-routes.ts';
import { SCIM_PREFIX } from '../scim/constants.ts';
import { refuseAbsoluteForm, rewriteRequestTarget } from './request-target.ts';
import { operationsRoutes } from './routes/operations-routes.ts';
import { adminRoutes } from './routes/admin/admin-routes.ts';
import { sessionRoutes } from './routes/external/session-routes.ts';
import { registerIdempotency } from './plugins/idempotency.ts';
import { refuseInvalidHost, serverLimitOptions, urlLengthLimit, withUrlLengthLimit } from './plugins/http-limits.ts';
import { refuseDuringShutdown, registerLoadShedding } from './plugins/load-shedding.ts';
import { registerConsole } from './plugins/console.ts';
import { oidcRoutes } from './oidc/oidc-routes.ts';
import { operatorSignInRoutes } from './oidc/operator-routes.ts';
import { identityProviderCheck } from './oidc/discovery-problem.ts';
import { createRelyingParty, type RelyingParty } from './oidc/relying-party.ts';
import { registerDocsPagePolicy, setSecurityHeaders } from './plugins/security-headers.ts';
import { syncHook } from './hooks.ts';
import { answerOtherMethods } from './method-not-allowed.ts';
import { lazySerializerFactory } from './serialization.ts';
import { rejectUnstorableText, requireJsonContentType, validatorCompiler } from './validation.ts';
import { depthLimitedJsonParser } from './json-body.ts';
import type { IdempotencyStore } from '../core/idempotency/idempotency-store.ts';
import type { RequestTransaction } from '../core/idempotency/request-transaction.ts';
import type { Registry } from 'prom-client';
import { memoryRateLimits, type RateLimits } from '../rate-limits/rate-limits.ts';

/** The audit stream routes' parts in an app built without them: every destination is refused. */
const WITHOUT_AUDIT_STREAMS: AuditStreamDependencies = {
  checkDestination: async () => {
    throw new AppError('validation_failed', 'Audit streams are not available on this server.', [{ field: 'destination', message: 'not available' }]);
  },
  formats: new Set(),
  sendTest: async () => ({ ok: false, error: 'audit streams are not available on this server' }),
};

/** Largest accepted request body: 64 KiB (docs/contract.md Part B, Errors). */
export const BODY_LIMIT_BYTES = 64 * 1024;

/** What the app runs on, injected so tests and production build it the same way. */
export interface AppDependencies {
  readonly store: Store;
  readonly idempotency: IdempotencyStore;
  /** Resolves when the database answers (for `/readyz`). */
  readonly ping: () => Promise<void>;
  /**
   * Opens one transaction for a whole request (PostgreSQL: `OpenDatabase.beginRequestTransaction`);
   * requests with an `Idempotency-Key` then claim the key, change and store their answer in it.
   */
  readonly beginTransaction?: () => Promise<RequestTransaction>;
  /** Pino options or `false`; defaults to JSON logs at the configured level. */
  readonly logger?: boolean | object;
  /** Where the default logger writes (a pino destination); stdout when absent. */
  readonly logStream?: NodeJS.WritableStream;
  /**
   * The registry `/metrics` serves, for metrics of what runs beside the app (the cache
   * listener, Redis); absent: a registry of this app's own.
   */
  readonly registry?: Registry;
  /**
   * Refuses a webhook URL the server must not call (`webhookUrlCheck` of webhooks/url-guard.ts
   * over the configured policy): rejects with AppError `invalid_webhook_url`.
   */
  readonly checkWebhookUrl: (url: string) => Promise<void>;
  /**
   * What the audit stream routes need of the stream worker (`streamDependencies` of
   * audit-streams/): the destination check, the formats available, the test send. Absent: every
   * destination is refused (an app built without the worker's parts).
   */
  readonly auditStreams?: AuditStreamDependencies;
  /**
   * The rate limits the hooks ask (built by the composition root: in Redis with `REDIS_URL`,
   * server/app-dependencies.ts); absent: this process's memory.
   */
  readonly rateLimits?: RateLimits;
  /**
   * The OpenID Connect relying party of the sign-ins and of the identity provider check (built
   * by the composition root, with its cache of discovered providers); absent: one of this app's
   * own under `config.outbound`.
   */
  readonly relyingParty?: RelyingParty;
  /** Directory of the built web console; default `console/dist` (see `registerConsole`). */
  readonly consoleDistDir?: string;
  /**
   * The clock (ms since the epoch) a request's key and console session are checked against
   * for their expiry and idle time; `Date.now` when absent. Tests pass one they move forward
   * instead of waiting for the time to pass.
   */
  readonly now?: () => number;
}

/**
 * The Fastify `logger` option: `given` (or logs at `level` to `stream`, else JSON lines to
 * standard output) with wum's serializers.
 */
function loggerOptions(given: boolean | object | undefined, level: string, stream: NodeJS.WritableStream | undefined): boolean | object {
  if (typeof given === 'object') return { serializers: LOG_SERIALIZERS, ...given };
  return given ?? { level, serializers: LOG_SERIALIZERS, stream: stream ?? resilientStdout() };
}

/**
 * Builds the whole Fastify application without listening: request id → tenant and key →
 * route → body parsing → schema validation → handler → core. Does no I/O: what talks to the
 * database, Redis or an identity provider is in `deps`, built by the composition root
 * (server/). Source: docs/architecture.md.
 */
export async function buildApp(config: Config, deps: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    // Route patterns, not URLs, and errors without statement values (log-serializers.ts).
    logger: loggerOptions(deps.logger, config.logLevel, deps.logStream),
    // One line per request instead of Fastify's two with whole objects (request-log.ts).
    logController: new RequestLogController(),
    genReqId: generateRequestId,
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT_BYTES,
    // Timeouts, header size and a problem+json answer to what Node's parser refuses.
    ...serverLimitOptions(config.http),
    // Requests during shutdown get our problem+json 503 (load-shedding.ts), not Fastify's.
    return503OnClosing: false,
    // Path parameters carry emails of up to 254 characters, percent-encoded up to 3x longer.
    routerOptions: { ignoreTrailingSlash: false, caseSensitive: true, maxParamLength: 1024 },
    // One normalisation of the path, which the router and every check read (request-target.ts).
    rewriteUrl: rewriteRequestTarget,
    // URLs the router rejects (bad percent-encoding, over-long parameter) as problem+json too.
    frameworkErrors: withUrlLengthLimit(config.http.maxUrlLength, handleFrameworkError),
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory } },
  });
  // Before any route: every path answers the methods it does not serve with 405 (method-not-allowed.ts).
  const otherMethods = answerOtherMethods(app);
  app.setValidatorCompiler(validatorCompiler);
  // JSON is the only body format of the API: anything else is 415 (docs/contract.md Part B, Errors).
  app.removeContentTypeParser(['text/plain', 'application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, depthLimitedJsonParser(app));
  // The constant work of every request, in one hook (each hook is a step of Fastify's own,
  // docs/performance.md): the request id and security headers first, so that every refusal
  // carries them, then the cheap refusals: URL size, Host, absolute form, shutdown.
  app.addHook(
    'onRequest',
    syncHook(
      setRequestIdHeader,
      setSecurityHeaders,
      urlLengthLimit(config.http.maxUrlLength),
      refuseInvalidHost,
      refuseAbsoluteForm,
      refuseDuringShutdown(app),
    ),
  );
  registerDocsPagePolicy(app);
  // Then overload.
  await registerLoadShedding(app, config.loadShedding);
  registerErrorHandling(app, (error) => deps.store.mapError(error));
  await registerOpenApi(app, config);
  const metrics = registerMetrics(app, deps.registry);
  registerConnectionLimits(app, config.http, metrics);
  const limits = deps.rateLimits ?? memoryRateLimits(config);
  registerTenantAuthentication(app, deps.store, config, limits, deps.now);
  requireJsonContentType(app);
  rejectUnstorableText(app);
  registerIdempotency(app, deps.idempotency, deps.beginTransaction);

  await app.register(usersRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store });
  await app.register(importsRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store });
  await app.register(activityRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store });
  await app.register(policiesRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store, limits: config.policies, mount: WORKSPACE_MOUNT });
  await app.register(productsRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store });
  await app.register(eventsRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store });
  await app.register(sessionRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store, sessions: config.sessions });
  const relyingParty = deps.relyingParty ?? createRelyingParty(config.outbound);
  const checkIdentityProvider = identityProviderCheck(relyingParty);
  const auditStreams = deps.auditStreams ?? WITHOUT_AUDIT_STREAMS;
  await app.register(selfServiceRoutes, { prefix: EXTERNAL_PREFIX, store: deps.store, checkWebhookUrl: deps.checkWebhookUrl, checkIdentityProvider, auditStreams });
  await app.register(scimRoutes, { prefix: SCIM_PREFIX, store: deps.store, server: config });
  const { operatorSignIn } = config;
  const operators = operatorSignIn
    ? { store: deps.store, policy: { issuer: operatorSignIn.issuer, emails: operatorSignIn.emails }, lifetime: config.sessions }
    : undefined;
  if (config.adminToken || operators) {
    await app.register(adminRoutes, {
      prefix: '/admin/v1',
      store: deps.store,
      adminToken: config.adminToken,
      operatorSessions: operators,
      baseDomain: config.baseDomain,
      authFailures: limits.authFailures,
      checkWebhookUrl: deps.checkWebhookUrl,
      checkIdentityProvider,
      auditStreams,
      policyLimits: config.policies,
    });
  }
  await app.register(operationsRoutes, { ping: deps.ping, metrics, baseDomain: config.baseDomain, metricsToken: config.bounds.metricsToken });
  await app.register(oidcRoutes, { store: deps.store, baseDomain: config.baseDomain, sessions: config.sessions, relyingParty, startLimits: limits });
  await app.register(operatorSignInRoutes, { baseDomain: config.baseDomain, sessions: config.sessions, operatorSignIn, operators, relyingParty, startLimits: limits });
  await registerConsole(app, deps.consoleDistDir === undefined ? {} : { distDir: deps.consoleDistDir });
  await registerApiReference(app, config.baseDomain);
  await otherMethods.afterRoutes();
  return app;
}
