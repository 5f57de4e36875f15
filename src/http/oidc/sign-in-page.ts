import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdmissionRefusal } from '../../core/sessions/sign-in-refused.ts';

/**
 * Why a sign-in was refused, as the log records it (docs/security.md, "Sign-in refusals"): the
 * domain's reasons ({@link AdmissionRefusal}) and the flow's own.
 */
export type RefusalReason =
  | AdmissionRefusal
  | 'workspace_not_found'
  | 'no_identity_provider'
  | 'provider_misconfigured'
  | 'provider_unreachable'
  | 'provider_error'
  | 'callback_invalid'
  | 'state_invalid'
  | 'state_cookie_mismatch'
  | 'provider_changed'
  | 'token_invalid'
  | 'userinfo_failed'
  | 'userinfo_subject_mismatch';

/** A refused sign-in: its status, its reason code (logged) and what the person is told (never logged: it may name their email). */
export interface Refusal {
  readonly status: number;
  readonly reason: RefusalReason;
  readonly message: string;
}

/** Where a refusal happened: the sign-in it belongs to, for the page's link and the log. */
export interface RefusalPlace {
  /** The start of this sign-in (`/console/oidc/start`…); absent when there is nothing to sign in with here. */
  readonly startPath?: string;
  /** The workspace's subdomain (the only name the log line carries); absent for the operators' sign-in. */
  readonly workspace?: string;
}

/** What else the log line may carry: the error behind the refusal, the provider's OAuth `error` code. */
export interface RefusalDetails {
  readonly err?: unknown;
  readonly providerError?: string;
}

/**
 * Refusals that are an ordinary outcome for the person (`info`); every other one points at a
 * provider, a configuration or a forged request and is logged at `warn`.
 */
const ORDINARY: ReadonlySet<RefusalReason> = new Set<RefusalReason>([
  'email_unverified',
  'email_not_ascii',
  'not_owner',
  'not_operator',
  'another_account',
  'workspace_not_found',
  'no_identity_provider',
  'provider_error',
  'state_invalid',
  'provider_changed',
]);

/** An OAuth error code as RFC 6749 §4.1.2.1 spells them; anything else is not logged. */
const OAUTH_ERROR_CODE = /^[a-z_]{1,64}$/;

/**
 * The page's look, consistent with the console's stylesheet (console/src/styles.css: its colours,
 * type, header bar, card and buttons), inline because the console's built stylesheet has a
 * content-hashed name, and allowed by its hash in the page's CSP.
 */
const STYLE = [
  ':root{--text:#1b1f24;--muted:#4b5563;--line:#d0d7de;--bg:#fff;--panel:#f6f8fa;--accent:#0a58b0;--accent-text:#fff;',
  "font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;font-size:15px;line-height:1.45;color:var(--text);background:var(--bg)}",
  '*{box-sizing:border-box}body{margin:0}a{color:var(--accent)}',
  "code{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:.92em}",
  ':focus-visible{outline:3px solid var(--accent);outline-offset:2px}',
  '.top{display:flex;align-items:center;gap:1.5rem;padding:.6rem 1.5rem;border-bottom:1px solid var(--line);background:var(--panel)}',
  '.brand{font-weight:700}main{padding:1.25rem 1.5rem 3rem;max-width:46rem}h1{font-size:1.6rem;margin:0 0 .6rem}',
  '.card{border:1px solid var(--line);border-radius:8px;padding:1rem 1.2rem;background:var(--bg)}.muted{color:var(--muted)}',
  '.actions{display:flex;gap:.5rem;margin-top:1rem;flex-wrap:wrap}',
  '.button{display:inline-block;padding:.4rem .85rem;border:1px solid #8c959f;border-radius:6px;background:var(--bg);color:var(--text);text-decoration:none;line-height:1.3}',
  '.button:hover{background:var(--panel)}.button-primary{background:var(--accent);border-color:var(--accent);color:var(--accent-text)}.button-primary:hover{background:#084a94}',
].join('');

/** The page's Content-Security-Policy: nothing loads, nothing runs; only its own style, by hash (CSP Level 2). */
const PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The `prompt` the "Sign in with another account" link asks for (the start route falls back to `login`). */
export const ANOTHER_ACCOUNT_PROMPT = 'select_account';

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The refusal page: the reason, the request id to quote, and the ways on. */
function refusalHtml(message: string, requestId: string, startPath: string | undefined): string {
  const another = startPath
    ? `<a class="button button-primary" id="another-account" href="${escapeHtml(`${startPath}?prompt=${ANOTHER_ACCOUNT_PROMPT}`)}">Sign in with another account</a>`
    : '';
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<meta name="referrer" content="no-referrer"><title>Sign-in refused · wum console</title><style>${STYLE}</style></head><body>` +
    '<header class="top"><span class="brand">wum console</span></header>' +
    `<main><div class="card"><h1>Sign-in refused</h1><p id="reason">${escapeHtml(message)}</p>` +
    `<p class="muted">Request id <code id="request-id">${escapeHtml(requestId)}</code>: quote it to your administrator, whose server log says why under this id.</p>` +
    `<p class="actions">${another}<a class="button" href="/console/">Back to the console</a></p></div></main></body></html>`
  );
}

/**
 * Answers a refused sign-in (docs/security.md, "Sign-in refusals"): one log line at `info` or
 * `warn` with the reason code, the status and the workspace's subdomain (never the message,
 * which may name an email), and a page a person can read (not JSON: the browser arrived here by
 * a redirect from the identity provider) styled like the console, with the request id (the
 * `X-Request-Id` of this response) and a "Sign in with another account" link that starts the
 * sign-in again with `prompt=select_account`.
 */
export function sendRefusal(request: FastifyRequest, reply: FastifyReply, place: RefusalPlace, refusal: Refusal, details: RefusalDetails = {}): FastifyReply {
  const { status, reason, message } = refusal;
  const line = {
    reason,
    status,
    ...(place.workspace ? { workspace: place.workspace } : {}),
    ...(details.providerError && OAUTH_ERROR_CODE.test(details.providerError) ? { providerError: details.providerError } : {}),
    ...(details.err === undefined ? {} : { err: details.err }),
  };
  if (ORDINARY.has(reason)) request.log.info(line, 'sign-in refused');
  else request.log.warn(line, 'sign-in refused');
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('content-security-policy', PAGE_CSP)
    .type('text/html; charset=utf-8')
    .send(refusalHtml(message, request.id, place.startPath));
}
