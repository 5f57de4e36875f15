import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** How long a sign-in may take at the provider, in ms. */
export const SIGN_IN_TTL_MS = 10 * 60_000;

const cookieName = (request: FastifyRequest) => (request.protocol === 'https' ? '__Host-wum_oidc_state' : 'wum_oidc_state');

/**
 * Ties a sign-in to the browser that started it: the `state` in an HttpOnly, SameSite=Lax
 * cookie (sent back on the provider's top-level redirect), so a sign-in started by someone
 * else cannot be completed in this browser (login CSRF, RFC 9700 §4.7).
 */
export function setStateCookie(request: FastifyRequest, reply: FastifyReply, state: string): void {
  reply.header(
    'set-cookie',
    stringifySetCookie({
      name: cookieName(request),
      value: state,
      httpOnly: true,
      sameSite: 'lax',
      secure: request.protocol === 'https',
      path: '/',
      maxAge: SIGN_IN_TTL_MS / 1000,
    }),
  );
}

/** The `state` this browser started a sign-in with, if any. */
export function stateCookieOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  return header ? parseCookie(header)[cookieName(request)] || undefined : undefined;
}

/** The Set-Cookie value that forgets the state cookie. */
export function clearedStateCookie(request: FastifyRequest): string {
  return stringifySetCookie({ name: cookieName(request), value: '', httpOnly: true, sameSite: 'lax', secure: request.protocol === 'https', path: '/', expires: new Date(0) });
}
