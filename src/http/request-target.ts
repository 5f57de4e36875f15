import type { IncomingMessage } from 'node:http';
import { AppError } from '../core/errors.ts';
import { canonicalScimTarget } from '../scim/constants.ts';
import type { RequestCheck } from './hooks.ts';

/*
 * The one normalisation of the request target. Fastify's `rewriteUrl` runs it before the
 * router, and `request.url` is its result, so the router and every check that reads the path
 * (tenant and key, limits, metrics and log labels) see the same path: an attacker cannot
 * spell a path one way for the checks and another for the router (`/%61pi/external/v2/…`,
 * `/x/../api/…`). See docs/security.md, "One path for the router and every check".
 */

/** Characters RFC 3986 §2.3 calls unreserved: their percent-encoded form means the same (§6.2.2.2). */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
/** `scheme://authority` at the start of an absolute-form request target (RFC 9112 §3.2.2). */
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;
/** Marks a request whose target came in absolute form, for {@link refuseAbsoluteForm}. */
const ABSOLUTE_FORM_SEEN = Symbol('wum.absoluteForm');

/** `%61` → `a`, `%7e` → `~`; other escapes are kept, with their hex digits upper-cased (RFC 3986 §6.2.2.1). */
function decodeUnreserved(path: string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
}

/** Removes `.` and `..` segments (RFC 3986 §5.2.4) and empty segments (`//`); `..` never climbs above `/`. */
function removeDotSegments(path: string): string {
  const out: string[] = [];
  const segments = path.split('/').slice(1);
  for (const [i, segment] of segments.entries()) {
    const last = i === segments.length - 1;
    if (segment === '..') out.pop();
    if (segment === '.' || segment === '..' || (segment === '' && !last)) {
      if (last) out.push('');
      continue;
    }
    out.push(segment);
  }
  return `/${out.join('/')}`;
}

/**
 * True when the normalisation could change nothing but a SCIM endpoint's spelling: an
 * origin-form target whose path has no `%` (no escape to decode), no `//` (no empty segment)
 * and no `/.` (no dot segment). Most requests are such; they skip the split, decode and
 * join, which are most of the cost of this hook (docs/performance.md).
 */
function isNormalPath(target: string): boolean {
  if (target.charCodeAt(0) !== 0x2f) return false;
  const queryAt = target.indexOf('?');
  const path = queryAt === -1 ? target : target.slice(0, queryAt);
  return !path.includes('%') && !path.includes('//') && !path.includes('/.');
}

/**
 * The request target in the form the router and the checks read: origin form, unreserved
 * characters decoded, dot and empty segments removed, SCIM endpoints spelled canonically;
 * the query is kept as sent. `absolute` tells that the target came in absolute form
 * (`http://host/path`), which the server refuses. A target that is not a path (`*`) is kept.
 * Source: RFC 3986 §5.2.4, §6.2.2; RFC 9112 §3.2.
 */
export function normaliseTarget(target: string): { readonly url: string; readonly absolute: boolean } {
  if (isNormalPath(target)) return { url: canonicalScimTarget(target), absolute: false };
  let url = target;
  const absolute = ABSOLUTE_FORM.exec(url);
  if (absolute) url = url.slice(absolute[0].length) || '/';
  if (!url.startsWith('/')) return { url, absolute: absolute !== null };
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const query = queryAt === -1 ? '' : url.slice(queryAt);
  return { url: canonicalScimTarget(removeDotSegments(decodeUnreserved(path)) + query), absolute: absolute !== null };
}

/** Fastify `rewriteUrl`: the normalised target of `raw`, remembering an absolute form on it. */
export function rewriteRequestTarget(raw: IncomingMessage): string {
  const { url, absolute } = normaliseTarget(raw.url ?? '/');
  if (absolute) (raw as IncomingMessage & { [ABSOLUTE_FORM_SEEN]?: true })[ABSOLUTE_FORM_SEEN] = true;
  return url;
}

/**
 * Refuses an absolute-form request target (`GET http://host/path HTTP/1.1`, as sent to a
 * forward proxy) with `400 bad_request` before the workspace or the key is looked at: wum is
 * an origin server and addresses a workspace by its Host, which such a target would override
 * (RFC 9112 §3.2.2). See docs/security.md.
 */
export const refuseAbsoluteForm: RequestCheck = (request) => {
  if ((request.raw as IncomingMessage & { [ABSOLUTE_FORM_SEEN]?: true })[ABSOLUTE_FORM_SEEN]) {
    throw new AppError('bad_request', 'Send the request target in origin form (a path), not as an absolute URL.');
  }
};
