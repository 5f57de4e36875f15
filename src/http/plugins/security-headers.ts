import { createHash } from 'node:crypto';
import helmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { OPENAPI_PATH } from './openapi.ts';

/** Where the API reference page and its script are served (`@scalar/fastify-api-reference`). */
export const DOCS_PREFIX = '/docs';

/**
 * Content-Security-Policy of every non-HTML response: JSON never runs, so nothing may load and
 * nothing may frame it (OWASP REST Security Cheat Sheet, "Security headers").
 */
export const API_CSP = "default-src 'none';frame-ancestors 'none'";

/** Inline `<script>` bodies of an HTML page (the API reference has one that starts the viewer). */
function inlineScripts(html: string): string[] {
  return [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi)].map((m) => m[1] ?? '');
}

/**
 * Content-Security-Policy of an HTML page we serve (the API reference under `/docs`): scripts
 * from this origin plus exactly the page's own inline scripts, by hash (CSP Level 2 hash
 * sources); styles from this origin and inline (the viewer injects a style element); data
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

/**
 * What helmet (as configured below) puts on a JSON response, plus `no-store`: for the answers
 * no hook runs for (URLs the router refuses, requests Node's parser refuses). A test checks
 * that helmet's output and this list do not drift apart.
 */
export const BASELINE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': API_CSP,
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'DENY',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
  'cache-control': 'no-store',
};

/**
 * Security headers on every response (issue 4, "Keys and secrets"; OWASP API8:2023):
 * `@fastify/helmet`'s set (HSTS, nosniff, `X-Frame-Options`, `Referrer-Policy: no-referrer`,
 * cross-origin isolation headers, no `X-Powered-By`) with a CSP that lets nothing load from
 * JSON, a CSP for the `/docs` HTML page built from the page itself, and
 * `Cache-Control: no-store` on everything but the public documentation: API responses carry
 * user data, keys and request ids that no shared or browser cache should keep.
 * Registered before any hook that can refuse a request, so refusals carry the headers too.
 */
export async function registerSecurityHeaders(app: FastifyInstance): Promise<void> {
  // The docs page runs a script; its policy is set from its HTML in onSend below.
  app.addHook('onRoute', (route) => {
    if (isDocsPage(route.url)) route.helmet = { contentSecurityPolicy: false };
  });
  await app.register(helmet, {
    global: true,
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    // Only an HTML page loads anything, and only from this origin.
    crossOriginEmbedderPolicy: false,
    referrerPolicy: { policy: 'no-referrer' },
    frameguard: { action: 'deny' },
  });
  app.addHook('onRequest', async (request, reply) => {
    if (!isDocumentation(request.routeOptions.url ?? '')) reply.header('cache-control', 'no-store');
  });
  app.addHook('onSend', async (_request, reply: FastifyReply, payload) => {
    if (typeof payload === 'string' && /^text\/html/i.test(String(reply.getHeader('content-type') ?? ''))) {
      reply.header('content-security-policy', htmlPolicy(payload));
    }
    return payload;
  });
}
