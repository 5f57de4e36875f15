import type { components } from './schema.ts';

/** RFC 9457 problem details as the wum API sends them. */
export type Problem = components['schemas']['Problem'];
/** One invalid field of a request: `field` is a path like `user.apps[1].role` or a parameter name. */
export type FieldError = NonNullable<Problem['errors']>[number];

/** What {@link WumApiError} is built from. */
export interface WumApiErrorInit {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly title?: string | undefined;
  readonly type?: string | undefined;
  readonly errors?: readonly FieldError[] | undefined;
  readonly requestId?: string | undefined;
  readonly retryAfterSeconds?: number | undefined;
  /** The call that failed, e.g. `POST http://acme.localhost:3000/api/external/v2/users`. */
  readonly operation: string;
  readonly cause?: unknown;
}

/**
 * The one error every SDK call throws.
 *
 * - The API answered with an error: `status` is the HTTP status, and `code`, `title`, `detail`,
 *   `errors` and `requestId` come from its RFC 9457 problem details (`code` is the stable
 *   snake_case identifier, e.g. `user_already_exists`). A body that is not problem details (a
 *   proxy's error page) gives `code` `http_<status>`.
 * - The API could not be reached, or did not answer in time: `status` is 0 and `code` is
 *   `network_error` or `timeout`; `detail` names the address and the cause, and `cause` holds
 *   the underlying error. Such a call may or may not have been applied.
 */
export class WumApiError extends Error {
  override readonly name = 'WumApiError';
  /** HTTP status; 0 when no response arrived. */
  readonly status: number;
  /** Stable error code: the problem's `code`, or `network_error`, `timeout`, `http_<status>`. */
  readonly code: string;
  /** The problem's title, or a short summary. */
  readonly title: string;
  /** What went wrong, for people. */
  readonly detail: string;
  /** Invalid fields, when the problem names them (empty otherwise). */
  readonly errors: readonly FieldError[];
  /** The request id (problem `request_id`, else the `X-Request-Id` header) for support; undefined without a response. */
  readonly requestId: string | undefined;
  /** The problem type URI, e.g. `urn:wum:problem:user_not_found`. */
  readonly type: string | undefined;
  /** `Retry-After` of the last response, in seconds, when it carried one. */
  readonly retryAfterSeconds: number | undefined;
  /** The call that failed: method and URL. */
  readonly operation: string;

  constructor(init: WumApiErrorInit) {
    super(`${init.status === 0 ? init.code : `${init.status} ${init.code}`}: ${init.detail}`, { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.title = init.title ?? init.code;
    this.detail = init.detail;
    this.errors = init.errors ?? [];
    this.requestId = init.requestId;
    this.type = init.type;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.operation = init.operation;
  }

  /** True when no response arrived (`network_error`, `timeout`): the call may or may not have been applied. */
  get isNetworkError(): boolean {
    return this.status === 0;
  }
}

function isProblem(body: unknown): body is Problem {
  if (typeof body !== 'object' || body === null) return false;
  const { code, detail } = body as Record<string, unknown>;
  return typeof code === 'string' && typeof detail === 'string';
}

/** The error of an API response that is not a success. */
export function errorFromResponse(operation: string, response: Response, body: unknown, retryAfterSeconds?: number): WumApiError {
  const headerId = response.headers.get('x-request-id') ?? undefined;
  if (isProblem(body)) {
    return new WumApiError({
      status: response.status,
      code: body.code,
      title: body.title,
      type: body.type,
      detail: body.detail,
      errors: Array.isArray(body.errors) ? body.errors : [],
      requestId: typeof body.request_id === 'string' ? body.request_id : headerId,
      retryAfterSeconds,
      operation,
    });
  }
  const text = typeof body === 'string' ? body.replace(/\s+/g, ' ').trim().slice(0, 200) : '';
  return new WumApiError({
    status: response.status,
    code: `http_${response.status}`,
    title: response.statusText || `HTTP ${response.status}`,
    detail: `${operation} answered ${response.status} ${response.statusText}${text ? `: ${text}` : ''}`.trim(),
    requestId: headerId,
    retryAfterSeconds,
    operation,
  });
}

/** The innermost `code`/`message` of a fetch failure (undici wraps socket errors in `cause`). */
function describeCause(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5; depth += 1) {
    const next = (current as { cause?: unknown } | undefined)?.cause;
    if (next === undefined || next === null) break;
    current = next;
  }
  if (current instanceof AggregateError && current.errors.length > 0) current = current.errors[0];
  const { code, message } = (current ?? {}) as { code?: unknown; message?: unknown };
  if (typeof message === 'string' && message) return message;
  return typeof code === 'string' ? code : String(current);
}

/** The error of a call that got no response: a network failure or a timeout. */
export function errorFromFailure(operation: string, failure: unknown, timeoutMs: number): WumApiError {
  const timedOut = (failure as { name?: unknown } | undefined)?.name === 'TimeoutError';
  return new WumApiError({
    status: 0,
    code: timedOut ? 'timeout' : 'network_error',
    title: timedOut ? 'Timeout' : 'Network error',
    detail: timedOut
      ? `${operation}: no response within ${timeoutMs} ms.`
      : `${operation}: could not reach the server (${describeCause(failure)}).`,
    operation,
    cause: failure,
  });
}
