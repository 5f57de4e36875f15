import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type * as oidc from 'openid-client';
import { AppError } from '../../core/errors.ts';
import type { OpenedSession } from '../../core/sessions/sessions-service.ts';
import { setSessionCookie } from '../session-cookie.ts';
import type { OutboundPolicy } from '../../outbound/outbound-guard.ts';
import { discoveryProblem } from './discovery-problem.ts';
import { authorizationUrl, newChecks, redeem, relyingParty, type ProviderSettings, type SignInChecks } from './relying-party.ts';
import { sendRefusal } from './sign-in-page.ts';
import { SIGN_IN_TTL_MS, setStateCookie, stateCookieOf } from './state-cookie.ts';

/** The `state` is stored hashed, like session ids: a copy of the table redeems nothing. */
export const hashState = (state: string) => createHash('sha256').update(state).digest('hex');

/** The redirect URI of this host at `path` (registered at the provider). */
export const redirectUri = (request: FastifyRequest, path: string) => `${request.protocol}://${request.host}${path}`;

/** A sign-in under way as the server keeps it until the provider sends the browser back. */
export interface StoredChecks {
  readonly codeVerifier: string;
  readonly nonce: string;
  readonly expiresAt: Date;
}

/** The refusal page's reason when a stored provider's configuration can never work under the outbound policy. */
const MISCONFIGURED =
  'The identity provider\'s configuration cannot be used by this server (its issuer is not a valid https URL, or names an address the server may not call). Ask the operator to set it again.';

/**
 * Starts a sign-in at `provider`, discovered under the outbound `policy`: new `state`, `nonce`
 * and PKCE verifier, kept by `save` (with the state's hash) and the state also in this
 * browser's cookie, then the browser is sent to the provider. A provider whose configuration
 * the outbound guard refuses (or whose issuer does not parse: a row stored before the check at
 * save) gets a refusal page (409); one that cannot be discovered now, `unreachable` (502).
 */
export async function startSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  provider: ProviderSettings,
  policy: OutboundPolicy,
  callbackPath: string,
  save: (stateHash: string, pending: StoredChecks) => Promise<void>,
  unreachable: string,
): Promise<FastifyReply> {
  const checks = newChecks();
  let url: URL;
  try {
    url = await authorizationUrl(await relyingParty(provider, policy), redirectUri(request, callbackPath), checks);
  } catch (err) {
    const { problem, message } = discoveryProblem(err);
    request.log.warn({ err, problem, reason: message }, 'identity provider discovery failed');
    const misconfigured = problem === 'invalid_url' || problem === 'http_refused' || problem === 'address_refused';
    return sendRefusal(reply, misconfigured ? 409 : 502, misconfigured ? MISCONFIGURED : unreachable);
  }
  await save(hashState(checks.state), { codeVerifier: checks.codeVerifier, nonce: checks.nonce, expiresAt: new Date(Date.now() + SIGN_IN_TTL_MS) });
  setStateCookie(request, reply, checks.state);
  return reply.header('cache-control', 'no-store').redirect(url.href, 302);
}

/**
 * Verifies the provider's answer at the callback: no error from the provider, a `state` this
 * server issued (taken at once by `take`: it serves one sign-in however the rest goes), not
 * expired, started in this very browser (its state cookie), then the code redeemed and the ID
 * token verified by openid-client against the provider `providerFor` names (or a refusal
 * reason it gives instead), every request to the provider under the outbound `policy`. Returns
 * the ID token's claims, or undefined once a refusal page is sent.
 */
export async function verifySignIn<P extends StoredChecks>(
  request: FastifyRequest,
  reply: FastifyReply,
  policy: OutboundPolicy,
  take: (stateHash: string) => Promise<P | undefined>,
  providerFor: (pending: P) => Promise<ProviderSettings | string>,
): Promise<oidc.IDToken | undefined> {
  const query = request.query as Record<string, unknown>;
  if (typeof query.error === 'string') {
    sendRefusal(reply, 403, `The identity provider refused the sign-in: ${query.error}${typeof query.error_description === 'string' ? ` (${query.error_description})` : ''}.`);
    return undefined;
  }
  const state = typeof query.state === 'string' ? query.state : '';
  const pending = state ? await take(hashState(state)) : undefined;
  if (!pending || pending.expiresAt.getTime() <= Date.now()) {
    sendRefusal(reply, 400, 'This sign-in link was already used or has expired. Start the sign-in again from the console.');
    return undefined;
  }
  if (stateCookieOf(request) !== state) {
    sendRefusal(reply, 400, 'This sign-in was started in another browser. Start the sign-in again from the console.');
    return undefined;
  }
  const provider = await providerFor(pending);
  if (typeof provider === 'string') {
    sendRefusal(reply, 400, provider);
    return undefined;
  }
  try {
    const callbackUrl = new URL(request.url, `${request.protocol}://${request.host}`);
    return await redeem(await relyingParty(provider, policy), callbackUrl, { state, nonce: pending.nonce, codeVerifier: pending.codeVerifier } satisfies SignInChecks);
  } catch (err) {
    request.log.warn({ err }, 'OpenID Connect sign-in did not verify');
    sendRefusal(reply, 403, 'The identity provider\'s answer could not be verified (its ID token is not valid for this console). Start the sign-in again or ask the operator.');
    return undefined;
  }
}

/**
 * Ends a verified sign-in: `open` decides who may enter and opens their session; a refusal it
 * throws (`sign_in_refused`) becomes a page saying why (403), otherwise the session cookie is
 * set and the browser sent back to the console, which reads the session when it sees
 * `signed_in` (console/src/pages/sign-in.tsx).
 */
export async function finishSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  open: () => Promise<OpenedSession>,
  signedIn: 'oidc' | 'operator',
): Promise<FastifyReply> {
  let opened: OpenedSession;
  try {
    opened = await open();
  } catch (error) {
    if (error instanceof AppError && error.code === 'sign_in_refused') return sendRefusal(reply, 403, error.message);
    throw error;
  }
  setSessionCookie(request, reply, opened.id, opened.expiresAt);
  return reply.header('cache-control', 'no-store').redirect(`/console/?signed_in=${signedIn}`, 303);
}
