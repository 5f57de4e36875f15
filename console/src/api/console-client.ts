/*
 * The console's calls to its own routes — its sign-ins and sessions, which are not part of the
 * public API (docs/api.md, "The console's routes") — through openapi-fetch typed by the types
 * generated from the console's document (console-schema.ts, `npm run sdk:generate`): a path,
 * a parameter or a field the server does not have fails the console's type check, as calls to
 * the public API do through client.ts. Failures are the SDK's WumApiError.
 */
import createClient from 'openapi-fetch';
import { errorFromResponse } from '../../../sdk/errors.ts';
import type { paths } from './console-schema.ts';

/** Where the console's workspace session is opened, read and ended (on a workspace's host). */
export const SESSION_PATH = '/api/external/v2/console/session';

/** Where an operator's session (signed in with the operator identity provider) is read and ended. */
export const OPERATOR_SESSION_PATH = '/console/operator/session';

/**
 * The typed client of this origin's console routes. The session cookie is HttpOnly: the browser
 * sends it by itself, to this origin only.
 */
export const consoleRoutes = createClient<paths>({ baseUrl: globalThis.location?.origin ?? '', credentials: 'same-origin' });

/** The workspace session as the server describes it. */
export type SessionInfo = Awaited<ReturnType<typeof readSession>>;

/** What a call of {@link consoleRoutes} resolved to. */
interface Answer<T> {
  readonly data?: T;
  readonly error?: unknown;
  readonly response: Response;
}

/** The body of a successful answer. @throws WumApiError with the problem's `code` otherwise. */
function bodyOf<T>(operation: string, answer: Answer<T>): T {
  if (answer.data === undefined || !answer.response.ok) throw errorFromResponse(operation, answer.response, answer.error);
  return answer.data;
}

/**
 * Reads the workspace session of this host's cookie.
 * @throws WumApiError, e.g. `invalid_session` (401) when there is none or it ended.
 */
export async function readSession(signal?: AbortSignal) {
  return bodyOf(`GET ${SESSION_PATH}`, await consoleRoutes.GET(SESSION_PATH, signal ? { signal } : {}));
}

/**
 * Exchanges a workspace API key for a session: the server answers with the session's cookie, so
 * the key is kept nowhere in the page.
 * @throws WumApiError, e.g. `invalid_api_key` (401), `key_sign_in_disabled` (403).
 */
export async function openKeySession(apiKey: string) {
  return bodyOf(`POST ${SESSION_PATH}`, await consoleRoutes.POST(SESSION_PATH, { headers: { 'x-api-key': apiKey } }));
}

/**
 * Whether the session of `kind` (the workspace's, or the operator's) is open, for the page's
 * first paint: its answer, or undefined when no answer came (a network failure says nothing
 * about the session). Never throws.
 */
export async function probeSession(kind: 'workspace' | 'operator') {
  const answer = kind === 'workspace' ? consoleRoutes.GET(SESSION_PATH) : consoleRoutes.GET(OPERATOR_SESSION_PATH);
  return answer.catch(() => undefined);
}

/** Ends the session of `kind` on the server, which clears its cookie; a failure is ignored (the page forgets it anyway). */
export function endSession(kind: 'workspace' | 'operator'): void {
  void (kind === 'workspace' ? consoleRoutes.DELETE(SESSION_PATH) : consoleRoutes.DELETE(OPERATOR_SESSION_PATH)).catch(() => undefined);
}

/** A workspace's sign-in options; a host that cannot say offers the key (the server decides anyway). */
export async function signInOptions() {
  const answer = await consoleRoutes.GET('/console/oidc/options');
  return answer.data ?? { identity_provider: null, key_sign_in: true };
}

/** The operator identity provider of this (operator) host, or null when the server has none (404). */
export async function operatorSignInOptions() {
  const answer = await consoleRoutes.GET('/console/operator/options');
  return answer.data?.identity_provider ?? null;
}
