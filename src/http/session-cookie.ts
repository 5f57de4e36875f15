import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';

/** The cookie over plain http (local development, the quick start). */
const PLAIN_NAME = 'wum_session';
/**
 * The cookie over https: the `__Host-` prefix makes browsers refuse it unless it is `Secure`,
 * has `Path=/` and no `Domain`, so a sibling subdomain cannot plant or overwrite it
 * (RFC 6265bis §4.1.3.2).
 */
const SECURE_NAME = '__Host-wum_session';

/** True when the request came over https (`X-Forwarded-Proto` counts only with `TRUST_PROXY`). */
function isHttps(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}

/** The cookie's name for this request's scheme. */
function cookieName(request: FastifyRequest): string {
  return isHttps(request) ? SECURE_NAME : PLAIN_NAME;
}

/** The session id the request's cookie carries, if any (only the cookie of its own scheme). */
export function sessionIdOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  const value = parseCookie(header)[cookieName(request)];
  return value || undefined;
}

/**
 * Sets the session cookie: `HttpOnly` (the page's script cannot read it), `SameSite=Lax` (not
 * sent with cross-site subrequests or form posts), `Path=/`, no `Domain` (this host only), and
 * over https `Secure` with the `__Host-` name. It expires with the session's absolute end.
 */
export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, id: string, expiresAt: Date): void {
  const https = isHttps(request);
  reply.header(
    'set-cookie',
    stringifySetCookie({ name: cookieName(request), value: id, httpOnly: true, sameSite: 'lax', secure: https, path: '/', expires: expiresAt }),
  );
}

/** Tells the browser to forget the session cookie. */
export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.header(
    'set-cookie',
    stringifySetCookie({ name: cookieName(request), value: '', httpOnly: true, sameSite: 'lax', secure: isHttps(request), path: '/', expires: new Date(0) }),
  );
}

/** Methods that change nothing, which a cross-origin page may trigger harmlessly. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses a change made with a session cookie unless it comes from this very origin: the
 * browser's `Sec-Fetch-Site: same-origin`, or an `Origin` equal to the request's own scheme and
 * host. A request with neither is refused too (browsers send `Origin` with every cross-origin
 * and every non-GET fetch). This answers cross-site request forgery beyond what `SameSite=Lax`
 * covers (a sibling subdomain is "same-site"). Source: OWASP CSRF Prevention Cheat Sheet,
 * "Fetch Metadata headers" and "Verifying Origin with standard headers".
 * @throws AppError `cross_origin_refused` (403).
 */
export function requireSameOrigin(request: FastifyRequest): void {
  if (SAFE_METHODS.has(request.method)) return;
  const site = request.headers['sec-fetch-site'];
  if (site === 'same-origin') return;
  const origin = request.headers.origin;
  if (site === undefined && origin !== undefined && origin === `${request.protocol}://${request.host}`) return;
  throw new AppError('cross_origin_refused', 'A change made with a console session must come from the console itself.');
}
