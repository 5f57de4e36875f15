import { Type, type Static } from '@sinclair/typebox';
import type { ErrorCode } from '../../core/errors.ts';
import type { RefusalReason } from '../oidc/sign-in-page.ts';
import { ActorSchema, EXTERNAL_API_ERRORS, StringEnum, jsonResponse, problemResponses } from './common.ts';

/*
 * The wire shapes of the console's own routes: its page, its sign-ins and its sessions
 * (docs/security.md, "Console sessions", "Signing in with an identity provider", "Operators
 * signing in"). They validate and describe like every route's schemas, but in the console's
 * document, not the public one (docs/api.md, "The console's routes").
 */

/** The tag that puts a route in the console's document and keeps it out of the public one. */
export const CONSOLE_TAG = 'console';

/**
 * A console route's schema: `hide` keeps it out of the public document, {@link CONSOLE_TAG}
 * puts it in the console's (src/http/plugins/openapi.ts).
 */
export function consoleSchema<S extends object>(schema: S): S & { readonly hide: true; readonly tags: string[] } {
  return { ...schema, hide: true, tags: [CONSOLE_TAG] };
}

/** Answers any route can give that no route asks for: the server's own failures. */
const SERVER_ERRORS = ['internal_error', 'service_unavailable', 'database_unavailable'] as const satisfies readonly ErrorCode[];

/** Problems answered before any route runs (the document adds them to every route; listed here so a page shares their status). */
const TRANSPORT_ERRORS = ['bad_request', 'uri_too_long', 'request_header_fields_too_large'] as const satisfies readonly ErrorCode[];

/** The `Set-Cookie` of an answer that opens, or forgets, a console session or a sign-in under way. */
const SetCookieHeader = {
  type: 'string',
  description: 'The console session cookie (`wum_session`, `__Host-wum_session` over https; HttpOnly, SameSite=Lax) or the sign-in\'s state cookie, set or cleared.',
} as const;

/** A redirect: its `Location` (what `location` says) and the cookies it sets. */
function redirectResponse(description: string, location: string) {
  return { description, headers: { Location: { type: 'string', description: location }, 'Set-Cookie': SetCookieHeader } };
}

/** The refusal page's body (src/http/oidc/sign-in-page.ts): HTML a person reads, with the request id to quote. */
const RefusalPage = Type.String({ description: 'An HTML page: "Sign-in refused", why, the request id, and the ways on.' });
const REFUSAL_EXAMPLE = '<!doctype html><html lang="en"><head><title>Sign-in refused · wum console</title></head><body>…</body></html>';

/**
 * The answers of a sign-in route: the refusal pages it may send, by status with their reason
 * codes (docs/security.md, "Sign-in refusals"), beside the problems `codes` (JSON, for what
 * fails before the flow runs) and the server's own failures. A status that is both a page and a
 * problem declares both media types.
 */
export function signInResponses(pages: Readonly<Partial<Record<number, readonly RefusalReason[]>>>, ...codes: ErrorCode[]) {
  const responses: Record<string, { description: string; content: Record<string, unknown> }> = problemResponses(...codes, ...TRANSPORT_ERRORS, ...SERVER_ERRORS);
  for (const [status, reasons = []] of Object.entries(pages)) {
    const page = `The sign-in refused, as a page (reason ${reasons.map((reason) => `\`${reason}\``).join(' or ')}).`;
    const problem = responses[status];
    responses[status] = {
      description: problem ? `${page} Before the sign-in runs: ${problem.description}` : page,
      content: { 'text/html': { schema: RefusalPage, example: REFUSAL_EXAMPLE }, ...problem?.content },
    };
  }
  return responses;
}

/** The `prompt` values the sign-in start accepts, for "Sign in with another account". */
export const SIGN_IN_PROMPTS = ['select_account', 'login'] as const;

/** The sign-in start's query: `prompt` only among {@link SIGN_IN_PROMPTS} (anything else is `400 invalid_parameter`). */
export const StartQuery = Type.Object({
  prompt: Type.Optional(
    StringEnum(SIGN_IN_PROMPTS, { description: 'Ask the provider to let the person pick or type another account (OpenID Connect Core 1.0 §3.1.2.1).' }),
  ),
});

/** The sign-in start's query, validated. */
export type StartQuery = Static<typeof StartQuery>;

/** A parameter the provider sends back once, as text of at most `maxLength` characters. */
const Returned = (description: string, maxLength: number) => Type.Optional(Type.String({ maxLength, description }));

/**
 * The callback's query, as the provider sends the browser back (RFC 6749 §4.1.2 and §4.1.2.1,
 * RFC 9207 §2): a `state` (with the `code`; one without is refused by the flow as not verified),
 * or an `error`. Each at most once and bounded;
 * parameters a provider adds beyond these (`scope`, `session_state`…) are let through, since
 * openid-client reads the whole callback URL. Anything else is the refusal `callback_invalid`.
 */
export const CallbackQuery = Type.Object(
  {
    code: Returned('The authorization code, redeemed once at the provider\'s token endpoint.', 4096),
    state: Returned('The sign-in\'s `state`, as the server issued it at the start.', 512),
    error: Returned('The provider\'s OAuth error code when it did not sign the person in, e.g. `access_denied`.', 256),
    error_description: Returned('The provider\'s words about its `error` (shown, never logged).', 1024),
    error_uri: Returned('A page of the provider about its `error`.', 2048),
    iss: Returned('The provider\'s issuer (RFC 9207), checked by openid-client when present.', 2048),
  },
  {
    additionalProperties: true,
    anyOf: [{ required: ['error'] }, { required: ['state'] }],
  },
);

/** The callback's query once validated. */
export type CallbackQuery = Static<typeof CallbackQuery>;

/** The workspace session as `GET /api/external/v2/console/session` describes it. */
export const SessionSchema = Type.Object(
  {
    workspace: Type.Object({ subdomain: Type.String({ description: 'The workspace the session opens.' }) }),
    actor: Type.Ref(ActorSchema),
    scopes: Type.Array(Type.String(), { description: 'What the session may do: its key\'s scopes, or `*` for an owner signed in as a person.' }),
    expires_at: Type.String({ format: 'date-time', description: 'When the session ends at the latest (its absolute lifetime).' }),
  },
  { description: 'A console session of the workspace.' },
);

const SESSION_EXAMPLE = {
  workspace: { subdomain: 'acme' },
  actor: { type: 'person', id: '3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30', label: 'olivia@acme.example' },
  scopes: ['*'],
  expires_at: '2026-01-10T21:00:00.000Z',
};

/** The operator's session as `GET /console/operator/session` describes it. */
export const OperatorSessionSchema = Type.Object(
  {
    actor: Type.Ref(ActorSchema),
    expires_at: Type.String({ format: 'date-time', description: 'When the session ends at the latest.' }),
  },
  { description: 'An operator\'s console session.' },
);

/** What the console's sign-in page offers on a workspace's host. */
export const SignInOptionsSchema = Type.Object(
  {
    identity_provider: Type.Union([Type.Object({ host: Type.String({ description: 'The provider\'s host, for the button.' }) }), Type.Null()], {
      description: 'The workspace\'s identity provider, or null when it has none.',
    }),
    key_sign_in: Type.Boolean({ description: 'Whether an API key may open a console session here (`CONSOLE_KEY_SIGN_IN`).' }),
  },
  { description: 'The sign-ins a workspace\'s host offers.' },
);

/** What the console's sign-in page offers an operator. */
export const OperatorSignInOptionsSchema = Type.Object(
  { identity_provider: Type.Object({ host: Type.String({ description: 'The operator identity provider\'s host.' }) }) },
  { description: 'The operator identity provider of this server.' },
);

/** Responses of the workspace session's three methods. */
export const SessionResponses = {
  open: {
    200: jsonResponse('A session is already open with this cookie: it is described, nothing changes.', SessionSchema, SESSION_EXAMPLE),
    201: jsonResponse('A session was opened; its cookie is set.', SessionSchema, SESSION_EXAMPLE, { 'Set-Cookie': SetCookieHeader }),
    ...problemResponses(...EXTERNAL_API_ERRORS, 'key_sign_in_disabled'),
  },
  read: {
    200: jsonResponse('The session of this cookie.', SessionSchema, SESSION_EXAMPLE),
    ...problemResponses(...EXTERNAL_API_ERRORS),
  },
  end: {
    204: { description: 'Signed out: the session (if any) ended and its cookie is cleared.', headers: { 'Set-Cookie': SetCookieHeader } },
    ...problemResponses(...EXTERNAL_API_ERRORS),
  },
};

/** The sign-in options' responses on a workspace's host. */
export const SignInOptionsResponses = {
  200: jsonResponse('The sign-ins this host offers.', SignInOptionsSchema, { identity_provider: { host: 'login.acme.example' }, key_sign_in: false }),
  ...problemResponses('workspace_not_found', 'identity_provider_misconfigured', ...SERVER_ERRORS),
};

/** The refusals a callback may send, by status (docs/security.md, "Sign-in refusals"). */
const CALLBACK_REFUSALS = {
  400: ['callback_invalid', 'state_invalid', 'state_cookie_mismatch', 'provider_changed'],
  403: ['provider_error', 'token_invalid', 'userinfo_subject_mismatch', 'not_owner', 'not_operator', 'email_unverified', 'email_not_ascii', 'email_missing', 'another_account'],
  502: ['provider_unreachable', 'userinfo_failed'],
} as const satisfies Partial<Record<number, readonly RefusalReason[]>>;

/** The start's 302 to the provider. */
const STARTED = redirectResponse('The sign-in started: the browser is sent to the provider; the state cookie is set.', 'The provider\'s authorization endpoint, with the sign-in\'s `state`, `nonce` and PKCE challenge.');

/** The callback's 303 back to the console. */
const SIGNED_IN = (as: string) => redirectResponse('Signed in: the session cookie is set, the state cookie cleared.', `\`/console/?signed_in=${as}\`, where the console reads the new session.`);

/** Responses of the workspace sign-in's start and callback. */
export const WorkspaceSignInResponses = {
  start: {
    302: STARTED,
    ...signInResponses({ 404: ['workspace_not_found', 'no_identity_provider'], 409: ['provider_misconfigured'], 502: ['provider_unreachable'] }, 'invalid_parameter', 'rate_limited'),
  },
  callback: {
    303: SIGNED_IN('oidc'),
    ...signInResponses({ ...CALLBACK_REFUSALS, 404: ['workspace_not_found'] }, 'invalid_parameter'),
  },
};

/** Problems of every operator sign-in route: on a workspace's host, or without an operator identity provider, it does not exist. */
const OPERATOR_ABSENT = ['not_found'] as const satisfies readonly ErrorCode[];

/** Responses of the operators' sign-in routes. */
export const OperatorSignInResponses = {
  options: {
    200: jsonResponse('The operator identity provider.', OperatorSignInOptionsSchema, { identity_provider: { host: 'login.example.com' } }),
    ...problemResponses(...OPERATOR_ABSENT, ...SERVER_ERRORS),
  },
  start: {
    302: STARTED,
    ...signInResponses({ 409: ['provider_misconfigured'], 502: ['provider_unreachable'] }, ...OPERATOR_ABSENT, 'invalid_parameter', 'rate_limited'),
  },
  callback: {
    303: SIGNED_IN('operator'),
    ...signInResponses(CALLBACK_REFUSALS, ...OPERATOR_ABSENT, 'invalid_parameter'),
  },
  read: {
    200: jsonResponse('The operator\'s session of this cookie.', OperatorSessionSchema, {
      actor: { type: 'operator', id: 'oidc:248289761001', label: 'ops@example.com' },
      expires_at: '2026-01-10T21:00:00.000Z',
    }),
    ...problemResponses(...OPERATOR_ABSENT, 'invalid_session', 'cross_origin_refused', ...SERVER_ERRORS),
  },
  end: {
    204: { description: 'Signed out: the session (if any) ended and its cookie is cleared.', headers: { 'Set-Cookie': SetCookieHeader } },
    ...problemResponses(...OPERATOR_ABSENT, 'cross_origin_refused', ...SERVER_ERRORS),
  },
};

/** The console's page: its HTML shell, for `/console/` and every client-side route under it. */
const ConsolePage = Type.String({ description: 'The console\'s HTML shell (or a page saying it has not been built).' });

/** Responses of the console's page routes. */
export const ConsolePageResponses = {
  redirect: {
    308: { description: 'The console lives at `/console/`.', headers: { Location: { type: 'string', description: '`/console/`' } } },
    ...problemResponses(...TRANSPORT_ERRORS, ...SERVER_ERRORS),
  },
  page: {
    200: { description: 'The console\'s page; its client-side routes run in the browser.', content: { 'text/html': { schema: ConsolePage, example: '<!doctype html><html lang="en">…</html>' } } },
    ...problemResponses(...TRANSPORT_ERRORS, ...SERVER_ERRORS),
  },
};
