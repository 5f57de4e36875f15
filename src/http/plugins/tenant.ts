import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { boundedLru } from '../../core/bounded-lru.ts';
import { authenticate, requireScope, type Tenant } from '../../core/api-keys/authenticate.ts';
import type { Config } from '../../config/load-config.ts';
import { AppError } from '../../core/errors.ts';
import { andThen, orElse, type Awaitable } from '../../core/awaitable.ts';
import type { Store } from '../../core/ports.ts';
import { isScimPath, SCIM_OPENAPI_PATH } from '../../scim/constants.ts';
import { requiredScopes } from '../route-scopes.ts';
import { sessionIdOf } from '../session-cookie.ts';
import { awaitableHook } from '../hooks.ts';
import { sessionTenant } from './session-auth.ts';
import { setRateLimitFields } from '../rate-limit/rate-limit-fields.ts';
import { countFailedAttempt } from '../rate-limit/failed-attempts.ts';
import type { RateLimits } from '../../rate-limits/rate-limits.ts';
import type { TokenBuckets } from '../../rate-limits/token-buckets.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated workspace and key; set on every external-API request that passed auth. */
    tenant?: Tenant;
  }
}

/** Path prefix of the external API (docs/contract.md Part A). */
export const EXTERNAL_PREFIX = '/api/external/v2';
/** Paths under the prefixes that are public documentation, served on any host without a key. */
const PUBLIC_PATHS = new Set([`${EXTERNAL_PREFIX}/openapi.json`, SCIM_OPENAPI_PATH]);
/** A DNS label: letters, digits, inner hyphens, 1-63 characters (RFC 1035 §2.3.1, RFC 1123). */
export const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
/** Write `last_used_at` at most this often per key, not on every request. */
const TOUCH_INTERVAL_MS = 60_000;

/**
 * The workspace label of a host name: `acme.localhost` → `acme` for base domain `localhost`.
 * Case-insensitive; the port must already be stripped. Undefined unless the host is exactly
 * one DNS label in front of the base domain. Source: docs/contract.md Part B, Addressing and tenancy.
 */
export function subdomainOf(hostname: string, baseDomain: string): string | undefined {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  const suffix = `.${baseDomain}`;
  if (!host.endsWith(suffix)) return undefined;
  const label = host.slice(0, -suffix.length);
  return DNS_LABEL.test(label) ? label : undefined;
}

/** What the checks read of a request's route, read once (each `request.routeOptions` builds a new object). */
interface RouteShape {
  /**
   * The route the router matched when there is one (so no spelling of a path reaches a
   * tenant route without the key), else the normalised request path.
   */
  readonly path: string;
  /** The matched route's schema (its `security` names the scopes), if any. */
  readonly schema: unknown;
}

function routeShape(request: FastifyRequest): RouteShape {
  const { url, schema } = request.routeOptions;
  return { path: url ?? request.url.split('?', 1)[0] ?? '', schema };
}

/** True for a path of the external API (or of the SCIM service) that needs a workspace and a key. */
export function isExternalApiPath(path: string): boolean {
  return (path === EXTERNAL_PREFIX || path.startsWith(`${EXTERNAL_PREFIX}/`) || isScimPath(path)) && !PUBLIC_PATHS.has(path);
}

/** The key a request presents: `X-Api-Key`, or on SCIM paths the bearer token of `Authorization` (RFC 6750 §2.1). */
function presentedKey(request: FastifyRequest, path: string): string | undefined {
  if (isScimPath(path)) return /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1];
  const presented = request.headers['x-api-key'];
  return Array.isArray(presented) ? presented[0] : presented;
}

/**
 * The workspace a request addresses: the label of its Host (or, behind a trusted proxy,
 * X-Forwarded-Host) in front of `baseDomain`. Source: docs/contract.md Part B, Addressing and tenancy.
 * @throws AppError `workspace_not_found` (404) on any other host.
 */
function workspaceOfHost(request: FastifyRequest, baseDomain: string): string {
  const subdomain = subdomainOf(request.hostname, baseDomain);
  if (!subdomain) {
    throw new AppError('workspace_not_found', 'Address the API through your workspace, e.g. https://acme.<domain>/api/external/v2.');
  }
  return subdomain;
}

/**
 * The tenant of the credential the request presents: its API key (expiry included), or without
 * one (and not on SCIM) the console's session cookie, where a change must then come from the
 * console's own origin (session-auth.ts); expiry and idle time against `now` (ms since the epoch).
 * Source: docs/contract.md Part B, Authentication.
 * @throws AppError `invalid_api_key` (401) and the session's refusals.
 */
function authenticateCredential(request: FastifyRequest, store: Store, sessions: Config['sessions'], subdomain: string, apiKey: string | undefined, path: string, now: number): Awaitable<Tenant> {
  const sessionId = apiKey || isScimPath(path) ? undefined : sessionIdOf(request);
  return sessionId ? sessionTenant(request, store, subdomain, sessionId, sessions, now) : authenticate(store, subdomain, apiKey, now);
}

/**
 * Counts a refused key against the failed-attempt limit (docs/security.md, "The failed-attempt
 * limit"), then fails as `error` would, or with `429` once the address or the key is over it.
 * The key was checked first: the limit never refuses a valid key. Other errors pass unchanged.
 */
function limitFailedAttempts(authFailures: TokenBuckets | undefined, request: FastifyRequest, reply: FastifyReply, subdomain: string, apiKey: string | undefined, error: unknown): Awaitable<never> {
  if (!authFailures || !(error instanceof AppError) || error.code !== 'invalid_api_key') throw error;
  return andThen(countFailedAttempt(authFailures, reply, request.ip, subdomain, apiKey ?? ''), (limited) => {
    throw limited ?? error;
  });
}

/**
 * Takes one token of the key's bucket (`RATE_LIMIT_PER_KEY`, `RATE_LIMIT_BURST`) and reports it
 * in the RateLimit fields; a bucket that cannot be read (Redis unreachable) lets the request through.
 * Source: docs/contract.md Part B, "Retries, limits and audit".
 * @throws AppError `rate_limited` (429) with `Retry-After` when the bucket is empty.
 */
function takePerKeyToken(perKey: TokenBuckets | undefined, reply: FastifyReply, tenant: Tenant): Awaitable<void> {
  if (!perKey) return;
  return andThen(perKey.take(tenant.apiKeyId), (taken) => {
    setRateLimitFields(reply, 'per-key', perKey, taken);
    if (taken && !taken.allowed) {
      throw new AppError('rate_limited', 'Too many requests for this API key; retry after the time in Retry-After.', undefined, {
        'retry-after': String(taken.retryAfterSeconds),
      });
    }
  });
}

/** The scopes the matched route names (docs/security.md, "API keys and scopes"). @throws AppError `insufficient_scope` (403). */
function requireRouteScopes(tenant: Tenant, route: RouteShape): void {
  for (const scope of requiredScopes(route.schema, route.path)) requireScope(tenant, scope);
}

/**
 * Records that the key was used (`last_used_at`), at most once a {@link TOUCH_INTERVAL_MS} per
 * key and without making the request wait; a failure is logged, never answered.
 */
function keyUseRecorder(store: Store): (request: FastifyRequest, tenant: Tenant) => void {
  const lastTouched = boundedLru<string, number>(100_000);
  return (request, tenant) => {
    const now = Date.now();
    if (now - (lastTouched.get(tenant.apiKeyId) ?? 0) < TOUCH_INTERVAL_MS) return;
    lastTouched.set(tenant.apiKeyId, now);
    store.apiKeys.touch(tenant.workspace.id, tenant.apiKeyId).catch((err) => request.log.warn({ err }, 'could not record key use'));
  };
}

/**
 * Authenticates every external-API and SCIM request before routing decides anything, one step
 * each: workspace from the Host → API key or console session cookie → (a refused key counted
 * against the failed-attempt limit, per client address and per key, and past
 * `AUTH_FAILURE_LIMIT` answered `429` instead of `401`) → per-key token bucket → the route's
 * scopes → the request is the tenant's. A limit that cannot be read (Redis unreachable) lets
 * the request through. Source: docs/contract.md Part B, Addressing, Authentication, Retries and
 * limits, Running several replicas; docs/security.md, "API keys and scopes".
 *
 * A callback hook: when the key and the limits answer from memory (the cached key, limits
 * in this process) the request goes on without a promise or a microtask; only a step that
 * reads the database or Redis makes the rest wait (docs/performance.md).
 * Expiry and idle time are checked against `now()` (the app's clock, `Date.now` by default).
 */
export function registerTenantAuthentication(app: FastifyInstance, store: Store, config: Config, limits: RateLimits, now: () => number = Date.now): void {
  const { perKey, authFailures } = limits;
  const recordKeyUse = keyUseRecorder(store);
  // Declared up front so every request object has the same shape (Fastify, "Decorators").
  app.decorateRequest('tenant', undefined);

  const authenticateRequest = (request: FastifyRequest, reply: FastifyReply): Awaitable<void> => {
    const route = routeShape(request);
    if (!isExternalApiPath(route.path)) return;
    const subdomain = workspaceOfHost(request, config.baseDomain);
    const apiKey = presentedKey(request, route.path);
    const tenant = orElse<Tenant>(
      () => authenticateCredential(request, store, config.sessions, subdomain, apiKey, route.path, now()),
      (error) => limitFailedAttempts(authFailures, request, reply, subdomain, apiKey, error),
    );
    return andThen(tenant, (found) =>
      andThen(takePerKeyToken(perKey, reply, found), () => {
        requireRouteScopes(found, route);
        request.tenant = found;
        recordKeyUse(request, found);
      }),
    );
  };

  app.addHook('onRequest', awaitableHook(authenticateRequest));
}

/** The tenant of an authenticated external-API request (set by the tenant hook). */
export function tenantOf(request: FastifyRequest): Tenant {
  if (!request.tenant) throw new AppError('internal_error', 'Request reached a tenant route without authentication.');
  return request.tenant;
}
