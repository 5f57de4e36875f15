/*
 * The console's only way to the server: openapi-fetch typed by the OpenAPI document's
 * generated types (sdk/schema.ts), so a call the API does not serve, or a field it does not
 * have, fails the console's type check. Failures are the SDK's WumApiError, and 429/503 are
 * retried by the SDK's own loop and policy (sdk/retry-loop.ts, sdk/retry.ts).
 */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from '../../../sdk/schema.ts';
import { retryPolicy } from '../../../sdk/retry.ts';
import { callWithRetries, type Outcome } from '../../../sdk/retry-loop.ts';
import { getCredentials } from '../session.ts';

/** The typed client of both APIs (the workspace API and the operator API). */
export type Api = Client<paths>;

/** Longest one attempt may take, in ms. */
const TIMEOUT_MS = 30_000;
/** The SDK's defaults, but a person waits: at most 4 attempts and 20 s. */
const POLICY = retryPolicy({ maxAttempts: 4, maxNetworkAttempts: 1, maxElapsedMs: 20_000 });

/**
 * The client of this origin's APIs. The operator token (`Authorization: Bearer`) is read from
 * the session at each request to `/admin/v1`; the workspace API is opened by the session
 * cookie, which the browser sends by itself to this origin only.
 */
export const api: Api = createClient<paths>({ baseUrl: globalThis.location?.origin ?? '' });
api.use({
  onRequest({ request, schemaPath }) {
    const { adminToken } = getCredentials();
    if (schemaPath.startsWith('/admin/') && adminToken) request.headers.set('authorization', `Bearer ${adminToken}`);
    return request;
  },
});

/** The result of {@link send}: the parsed body and the response (for `ETag`). */
export interface Sent<T extends Outcome> {
  readonly data: NonNullable<T['data']>;
  readonly response: Response;
}

/**
 * Runs one API call through the SDK's retry loop (sdk/retry-loop.ts): `attempt` gets an abort
 * signal (the caller's, plus a 30 s timeout). A `429` or `503` is tried again after its
 * `Retry-After` (they are answered before anything is applied); a request that got no answer
 * is not sent again; anything else that is not a success throws.
 * @param operation - method and path for error messages, e.g. `GET /api/external/v2/users`.
 * @throws WumApiError with the problem's `code`, `detail`, `errors` and `request_id`; `status`
 *   0 and `code` `network_error`/`timeout` when no response arrived (or `aborted`, when the
 *   caller's signal fired).
 */
export async function send<T extends Outcome>(
  operation: string,
  attempt: (signal: AbortSignal) => Promise<T>,
  signal?: AbortSignal,
): Promise<Sent<T>> {
  const { data, response } = await callWithRetries(operation, POLICY, TIMEOUT_MS, { replayable: false, ...(signal ? { signal } : {}) }, attempt);
  return { data: data as NonNullable<T['data']>, response };
}

/** The `ETag` of a response (a user's version for `If-Match`), or `*` when it has none. */
export function etagOf(response: Response): string {
  return response.headers.get('etag') ?? '*';
}
