import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type * as oidc from 'openid-client';
import type { VerifiedIdentity } from '../../core/sessions/person-sign-in.ts';
import type { OpenedSession } from '../../core/sessions/sessions-service.ts';
import { SignInRefusedError } from '../../core/sessions/sign-in-refused.ts';
import { setSessionCookie } from '../session-cookie.ts';
import type { CallbackQuery, StartQuery } from '../schemas/console.ts';
import { discoveryProblem } from './discovery-problem.ts';
import {
  authorizationUrl,
  identityOf,
  newChecks,
  redeem,
  UserInfoSubjectMismatchError,
  type ProviderSettings,
  type RedeemedSignIn,
  type RelyingParty,
  type SignInChecks,
} from './relying-party.ts';
import { sendRefusal, type Refusal, type RefusalDetails, type RefusalPlace } from './sign-in-page.ts';
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

/** The refusal when a stored provider's configuration can never work under the outbound policy. */
const MISCONFIGURED: Refusal = {
  status: 409,
  reason: 'provider_misconfigured',
  message:
    'The identity provider\'s configuration cannot be used by this server (its issuer is not a valid https URL, or names an address the server may not call). Ask the operator to set it again.',
};

/**
 * Starts a sign-in at `provider`, discovered by `relyingParty`: new `state`, `nonce`
 * and PKCE verifier, kept by `save` (with the state's hash) and the state also in this
 * browser's cookie, then the browser is sent to the provider, with the `prompt` of the request's
 * query if any (validated by its schema, `StartQuery`). A provider whose configuration the outbound
 * guard refuses (or whose issuer does not parse: a row stored before the check at save) gets a
 * refusal page (409, `provider_misconfigured`); one that cannot be discovered now, `unreachable`
 * (502, `provider_unreachable`).
 */
export async function startSignIn(
  request: FastifyRequest<{ Querystring: StartQuery }>,
  reply: FastifyReply,
  place: RefusalPlace,
  provider: ProviderSettings,
  relyingParty: RelyingParty,
  callbackPath: string,
  save: (stateHash: string, pending: StoredChecks) => Promise<void>,
  unreachable: string,
): Promise<FastifyReply> {
  const checks = newChecks();
  const { prompt } = request.query;
  let url: URL;
  try {
    url = await authorizationUrl(await relyingParty.configuration(provider), redirectUri(request, callbackPath), checks, prompt);
  } catch (err) {
    const { problem, message } = discoveryProblem(err);
    const misconfigured = problem === 'invalid_url' || problem === 'http_refused' || problem === 'address_refused';
    const refusal: Refusal = misconfigured ? MISCONFIGURED : { status: 502, reason: 'provider_unreachable', message: unreachable };
    return sendRefusal(request, reply, place, refusal, { err: Object.assign(new Error(message, { cause: err }), { problem }) });
  }
  await save(hashState(checks.state), { codeVerifier: checks.codeVerifier, nonce: checks.nonce, expiresAt: new Date(Date.now() + SIGN_IN_TTL_MS) });
  setStateCookie(request, reply, checks.state);
  return reply.header('cache-control', 'no-store').redirect(url.href, 302);
}

/** The refusal of a callback whose query is not a provider's answer (docs/security.md, "Sign-in refusals"). */
const CALLBACK_INVALID: Refusal = {
  status: 400,
  reason: 'callback_invalid',
  message:
    'This address is not an answer of the identity provider the console can read (it carries a state, or an error, each once). Start the sign-in again from the console.',
};

/**
 * Verifies the provider's answer at the callback: a query its schema (`CallbackQuery`)
 * accepts (the route validates with `attachValidation`, and a query it refuses gets the refusal
 * `callback_invalid`), no error from the provider, a `state` this
 * server issued (taken at once by `take`: it serves one sign-in however the rest goes), not
 * expired, started in this very browser (its state cookie), then the code redeemed and the ID
 * token verified by openid-client against the provider `providerFor` names (or a refusal
 * message it gives instead), every request to the provider by `relyingParty` (under the outbound policy), and the
 * email taken from the ID token or the UserInfo endpoint ({@link identityOf}). Returns who signed
 * in, or undefined once a refusal page is sent (each with its reason code: docs/security.md,
 * "Sign-in refusals").
 */
export async function verifySignIn<P extends StoredChecks>(
  request: FastifyRequest<{ Querystring: CallbackQuery }>,
  reply: FastifyReply,
  place: RefusalPlace,
  relyingParty: RelyingParty,
  take: (stateHash: string) => Promise<P | undefined>,
  providerFor: (pending: P) => Promise<ProviderSettings | string>,
): Promise<VerifiedIdentity | undefined> {
  const refuse = (refusal: Refusal, details?: RefusalDetails) => {
    sendRefusal(request, reply, place, refusal, details);
    return undefined;
  };
  // The route validates with attachValidation, so that a person gets this page, not JSON.
  if (request.validationError) return refuse(CALLBACK_INVALID);
  const { error, error_description: errorDescription, state } = request.query;
  if (error !== undefined) {
    const description = errorDescription === undefined ? '' : ` (${errorDescription})`;
    const message = `The identity provider refused the sign-in: ${error}${description}.`;
    return refuse({ status: 403, reason: 'provider_error', message }, { providerError: error });
  }
  const pending = state ? await take(hashState(state)) : undefined;
  if (!pending || pending.expiresAt.getTime() <= Date.now()) {
    return refuse({ status: 400, reason: 'state_invalid', message: 'This sign-in link was already used or has expired. Start the sign-in again from the console.' });
  }
  if (stateCookieOf(request) !== state) {
    return refuse({ status: 400, reason: 'state_cookie_mismatch', message: 'This sign-in was started in another browser. Start the sign-in again from the console.' });
  }
  const provider = await providerFor(pending);
  if (typeof provider === 'string') return refuse({ status: 400, reason: 'provider_changed', message: provider });
  let config: oidc.Configuration;
  let redeemed: RedeemedSignIn;
  try {
    config = await relyingParty.configuration(provider);
  } catch (err) {
    return refuse({ status: 502, reason: 'provider_unreachable', message: 'The identity provider cannot be reached now. Start the sign-in again later.' }, { err });
  }
  try {
    const callbackUrl = new URL(request.url, `${request.protocol}://${request.host}`);
    redeemed = await redeem(config, callbackUrl, { state: state ?? '', nonce: pending.nonce, codeVerifier: pending.codeVerifier } satisfies SignInChecks);
  } catch (err) {
    const message = 'The identity provider\'s answer could not be verified (its ID token is not valid for this console). Start the sign-in again or ask the operator.';
    return refuse({ status: 403, reason: 'token_invalid', message }, { err });
  }
  try {
    return await identityOf(config, redeemed);
  } catch (err) {
    if (err instanceof UserInfoSubjectMismatchError) {
      return refuse({ status: 403, reason: 'userinfo_subject_mismatch', message: 'The identity provider described another account than the one that signed in. Start the sign-in again or ask the operator.' });
    }
    const message = 'The identity provider did not answer the request for your email address (its UserInfo endpoint). Start the sign-in again later or ask the operator.';
    return refuse({ status: 502, reason: 'userinfo_failed', message }, { err });
  }
}

/**
 * Ends a verified sign-in: `open` decides who may enter and opens their session; a refusal it
 * throws (SignInRefusedError) becomes a page saying why (403, with the error's reason code in
 * the log), otherwise the session cookie is set and the browser sent back to the console, which
 * reads the session when it sees `signed_in` (console/src/pages/sign-in.tsx).
 */
export async function finishSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  place: RefusalPlace,
  open: () => Promise<OpenedSession>,
  signedIn: 'oidc' | 'operator',
): Promise<FastifyReply> {
  let opened: OpenedSession;
  try {
    opened = await open();
  } catch (error) {
    if (error instanceof SignInRefusedError) return sendRefusal(request, reply, place, { status: 403, reason: error.reason, message: error.message });
    throw error;
  }
  setSessionCookie(request, reply, opened.id, opened.expiresAt);
  return reply.header('cache-control', 'no-store').redirect(`/console/?signed_in=${signedIn}`, 303);
}
