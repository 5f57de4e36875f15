import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { addRouteHook, type RequestCheck } from '../hooks.ts';
import { DOCS_PREFIX, OPENAPI_PATH } from './openapi.ts';

/**
 * Content-Security-Policy of every non-HTML response: JSON never runs, so nothing may load and
 * nothing may frame it (OWASP REST Security Cheat Sheet, "Security headers").
 */
export const API_CSP = "default-src 'none';frame-ancestors 'none'";

/** Inline `<script>` bodies of an HTML page (the API reference page has none: it starts from a local script). */
function inlineScripts(html: string): string[] {
  return [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi)].map((m) => m[1] ?? '');
}

/**
 * Content-Security-Policy of an HTML page we serve (the API reference under `/docs`): scripts
 * from this origin plus exactly the page's own inline scripts, by hash (CSP Level 2 hash
 * sources); styles from this origin and inline (the viewer sets style attributes); data
 * only from this origin (the OpenAPI document). Third-party fonts are not loaded.
 */
export function htmlPolicy(html: string): string {
  const hashes = inlineScripts(html).map((s) => `'sha256-${createHash('sha256').update(s).digest('base64')}'`);
  return [
    "default-src 'none'",
    `script-src 'self' ${hashes.join(' ')}`.trim(),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Routes of the API reference page and its assets. */
function isDocsPage(route: string): boolean {
  return route === DOCS_PREFIX || route.startsWith(`${DOCS_PREFIX}/`);
}

/** Routes whose answers are public documentation: the OpenAPI document and the `/docs` page. */
function isDocumentation(route: string): boolean {
  return route === OPENAPI_PATH || isDocsPage(route);
}

/** helmet's options: a CSP that lets nothing load from JSON; only an HTML page loads anything. */
const HELMET_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  crossOriginEmbedderPolicy: false,
  referrerPolicy: { policy: 'no-referrer' },
  frameguard: { action: 'deny' },
};

/**
 * The headers helmet's middleware sets with `options`, lower-cased. Computed once: with these
 * options the set does not depend on the request, and recomputing it per response cost about
 * 5 µs (docs/performance.md).
 */
function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]) => (headers[name.toLowerCase()] = String(value)),
    removeHeader: () => {},
  };
  let failure: unknown;
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (error?: unknown) => (failure = error));
  // helmet reports only Errors (a bad option); anything else is wrapped so the stack says where.
  if (failure) throw failure instanceof Error ? failure : new Error('helmet refused its options', { cause: failure });
  return headers;
}

/**
 * What goes on every response but the documentation's: helmet's set (HSTS, nosniff,
 * `X-Frame-Options`, `Referrer-Policy: no-referrer`, cross-origin isolation headers) as
 * configured above, plus `Cache-Control: no-store`. Also put on the answers no hook runs for
 * (URLs the router refuses, requests Node's parser refuses).
 */
export const BASELINE_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  ...helmetHeaders(HELMET_OPTIONS),
  'cache-control': 'no-store',
});

/** The same without `Cache-Control`: for the public documentation, which may be cached. */
const DOCUMENTATION_HEADERS: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(Object.entries(BASELINE_SECURITY_HEADERS).filter(([name]) => name !== 'cache-control')),
);

/**
 * Security headers on every response (docs/operations.md, "Security headers"; OWASP API8:2023):
 * {@link BASELINE_SECURITY_HEADERS}, except that the public documentation may be cached (and
 * the `/docs` HTML page gets a CSP built from the page itself, {@link registerDocsPagePolicy}).
 * API responses carry user data, keys and request ids that no shared or browser cache should
 * keep. Fastify sends no `X-Powered-By`. Runs before any check that can refuse a request
 * (app.ts), so refusals carry the headers too.
 */
export const setSecurityHeaders: RequestCheck = (request, reply) => {
  reply.headers(isDocumentation(request.routeOptions.url ?? '') ? DOCUMENTATION_HEADERS : BASELINE_SECURITY_HEADERS);
};

/** The `/docs` HTML page's own Content-Security-Policy, on the routes of the API reference only. */
export function registerDocsPagePolicy(app: FastifyInstance): void {
  const pagePolicy = (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    if (typeof payload === 'string' && /^text\/html/i.test(String(reply.getHeader('content-type') ?? ''))) {
      reply.header('content-security-policy', htmlPolicy(payload));
    }
    done(null, payload);
  };
  app.addHook('onRoute', (route) => {
    if (isDocsPage(route.url)) addRouteHook(route, 'onSend', pagePolicy);
  });
}
