/*
 * The requests the benchmark sends: each addressed to a seeded workspace by its Host and
 * key, with unique emails for adds and each seeded user deactivated at most once.
 */
import type { HttpRequestSpec } from './http-load.ts';
import { seededEmail, type SeededWorkspace } from './seed.ts';

/** Path prefix of the external API. */
export const API = '/api/external/v2';
/** Page size of every listing the benchmark reads (the API's default). */
export const PAGE_SIZE = 30;

let emailCounter = 0;
/** Tells this run's new emails from those of an earlier run on the same data. */
const runTag = Date.now().toString(36);

/** The headers that address `ws`: its Host and its API key (and a JSON content type). */
export function headersOf(ws: SeededWorkspace, json = false): Record<string, string> {
  return {
    host: `${ws.subdomain}.localhost`,
    'x-api-key': ws.apiKey,
    ...(json ? { 'content-type': 'application/json' } : {}),
  };
}

/** An email no user of `ws` has had in this process, e.g. `nlx2k9-17@adds.example`. */
export function uniqueEmail(ws: SeededWorkspace): string {
  emailCounter += 1;
  return `n${runTag}-${emailCounter}@${ws.subdomain}.example`;
}

/** `POST /users` of a new non-owner with two apps. */
export function addRequest(ws: SeededWorkspace): HttpRequestSpec {
  const user = {
    email: uniqueEmail(ws),
    role: 'non_owner',
    first_name: 'Bench',
    apps: [
      { name: 'crm', role: 'member' },
      { name: 'analytics', role: 'viewer' },
    ],
  };
  return { method: 'POST', path: `${API}/users`, headers: headersOf(ws, true), body: JSON.stringify({ user }) };
}

/** `GET /users` of page `page` (1-based) of {@link PAGE_SIZE}. */
export function listRequest(ws: SeededWorkspace, page: number): HttpRequestSpec {
  return { method: 'GET', path: `${API}/users?page_number=${page}&page_size=${PAGE_SIZE}`, headers: headersOf(ws) };
}

/** `DELETE /users/{email}`. */
export function removeRequest(ws: SeededWorkspace, email: string): HttpRequestSpec {
  return { method: 'DELETE', path: `${API}/users/${encodeURIComponent(email)}`, headers: headersOf(ws) };
}

/** `PATCH /users/{email}` giving the user a first name no other request of this process gave. */
export function patchRequest(ws: SeededWorkspace, email: string): HttpRequestSpec {
  emailCounter += 1;
  return {
    method: 'PATCH',
    path: `${API}/users/${encodeURIComponent(email)}`,
    headers: headersOf(ws, true),
    body: JSON.stringify({ user: { first_name: `Patched ${runTag}-${emailCounter}` } }),
  };
}

/** `GET /users?q=…`: the users whose email, first or last name starts with `prefix`. */
export function searchRequest(ws: SeededWorkspace, prefix: string): HttpRequestSpec {
  return { method: 'GET', path: `${API}/users?q=${encodeURIComponent(prefix)}&page_size=${PAGE_SIZE}`, headers: headersOf(ws) };
}

/** SCIM `GET /Users?filter=userName eq "…"`, authenticated the SCIM way (a bearer key). */
export function scimFindRequest(ws: SeededWorkspace, email: string): HttpRequestSpec {
  const { 'x-api-key': key, ...headers } = headersOf(ws);
  return {
    method: 'GET',
    path: `/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${email}"`)}`,
    headers: { ...headers, authorization: `Bearer ${key}` },
  };
}

/** `GET /products`. */
export function productsRequest(ws: SeededWorkspace): HttpRequestSpec {
  return { method: 'GET', path: `${API}/products`, headers: headersOf(ws) };
}

/**
 * Hands out the emails of seeded users `from`…`to` of `ws`, each once, so that every removal
 * deactivates an active user (user 1 is the owner: start at 2).
 * @throws Error when the range is used up (seed more users).
 */
export function removalCursor(ws: SeededWorkspace, from: number, to: number): () => string {
  let next = from;
  return () => {
    if (next > to) throw new Error(`ran out of users to remove in ${ws.subdomain}; seed more`);
    return seededEmail(ws.subdomain, next++);
  };
}

/** The last page number of `users` rows. */
export function lastPage(users: number): number {
  return Math.ceil(users / PAGE_SIZE);
}
