import { WumApiError } from '../../../sdk/errors.ts';
import { signOut } from '../session.ts';

/** Codes that mean the credentials no longer open the API: the way out is to sign in again. */
const SIGN_IN_CODES = new Set(['missing_api_key', 'invalid_api_key', 'invalid_session', 'invalid_admin_token']);

/** Props of {@link ErrorNotice}. */
export interface ErrorNoticeProps {
  /** What failed: a WumApiError shows its detail, code and request id; anything else its message. */
  readonly error: unknown;
  /** What the person was doing, e.g. "Could not save the user". */
  readonly title?: string;
  /** Offered as a "Try again" button. */
  readonly onRetry?: () => void;
}

/**
 * An API error as a person needs it: the problem's `detail` (what went wrong), its `code` and
 * the `request_id` to quote to support, announced to screen readers (`role="alert"`). A
 * rejected key or token offers to sign in again. Source: docs/console.md, "Using it" (every API error shows its
 * `detail` and `request_id`).
 */
export function ErrorNotice({ error, title = 'Something went wrong', onRetry }: ErrorNoticeProps) {
  const apiError = error instanceof WumApiError ? error : undefined;
  return (
    <div class="notice notice-error" role="alert">
      <p class="notice-title">{title}</p>
      <p class="notice-detail">{apiError ? apiError.detail : String((error as Error)?.message ?? error)}</p>
      {apiError && (
        <p class="notice-meta">
          <span>
            Code <code>{apiError.code}</code>
          </span>
          {apiError.requestId && (
            <span>
              {' · '}Request id <code class="request-id">{apiError.requestId}</code>
            </span>
          )}
        </p>
      )}
      {apiError && apiError.errors.length > 0 && (
        <ul class="notice-fields">
          {apiError.errors.map((e) => (
            <li key={e.field}>
              <code>{e.field}</code>: {e.message}
            </li>
          ))}
        </ul>
      )}
      {onRetry && (
        <button type="button" class="button" onClick={onRetry}>
          Try again
        </button>
      )}
      {apiError && SIGN_IN_CODES.has(apiError.code) && (
        <button type="button" class="button" onClick={signOut}>
          Sign in again
        </button>
      )}
    </div>
  );
}
