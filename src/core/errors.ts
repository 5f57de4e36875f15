/**
 * The stable error codes of the API with their HTTP status and title.
 * Source: docs/contract.md Part B (every `code` it names), docs/api.md "Identity provider" (the
 * `identity_provider_*` refusals of a provider's configuration), docs/security.md (408, 414, 431 and 503 for the
 * server's own limits), RFC 9457 §3.1 (title is per type), RFC 7644 §3.12 (the SCIM kinds
 * of bad request, and SCIM groups, docs/contract.md Part B "SCIM 2.0 provisioning") and docs/contract.md Part B
 * "A highly available database" (503 `database_unavailable`). Both 503 codes mean "retry after
 * `Retry-After`": `service_unavailable` when this process or the database is busy (load
 * shedding, shutdown, a statement timeout, a full pool, a lost race), `database_unavailable`
 * when no database server could take the request (none reachable, none writable, a connection
 * lost mid-request).
 */
export const ERROR_CATALOGUE = {
  validation_failed: { status: 400, title: 'Validation failed' },
  invalid_parameter: { status: 400, title: 'Invalid parameter' },
  malformed_json: { status: 400, title: 'Malformed JSON' },
  bad_request: { status: 400, title: 'Bad request' },
  // SCIM's kinds of bad request (RFC 7644 §3.12, Table 9), rendered there with their scimType.
  invalid_filter: { status: 400, title: 'Invalid filter' },
  invalid_path: { status: 400, title: 'Invalid path' },
  invalid_value: { status: 400, title: 'Invalid value' },
  invalid_syntax: { status: 400, title: 'Invalid syntax' },
  mutability: { status: 400, title: 'Attribute is immutable' },
  no_target: { status: 400, title: 'No target' },
  missing_api_key: { status: 401, title: 'Missing API key' },
  invalid_api_key: { status: 401, title: 'Invalid API key' },
  invalid_admin_token: { status: 401, title: 'Invalid admin token' },
  invalid_session: { status: 401, title: 'Invalid session' },
  insufficient_scope: { status: 403, title: 'Insufficient scope' },
  cross_origin_refused: { status: 403, title: 'Cross-origin request refused' },
  key_sign_in_disabled: { status: 403, title: 'Key sign-in disabled' },
  sign_in_refused: { status: 403, title: 'Sign-in refused' },
  not_found: { status: 404, title: 'Not found' },
  workspace_not_found: { status: 404, title: 'Workspace not found' },
  user_not_found: { status: 404, title: 'User not found' },
  policy_not_found: { status: 404, title: 'Policy not found' },
  api_key_not_found: { status: 404, title: 'API key not found' },
  identity_provider_not_found: { status: 404, title: 'Identity provider not found' },
  product_not_found: { status: 404, title: 'Product not found' },
  group_not_found: { status: 404, title: 'Group not found' },
  webhook_endpoint_not_found: { status: 404, title: 'Webhook endpoint not found' },
  webhook_delivery_not_found: { status: 404, title: 'Webhook delivery not found' },
  audit_stream_not_found: { status: 404, title: 'Audit stream not found' },
  import_not_found: { status: 404, title: 'Import not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'Request timeout' },
  user_already_exists: { status: 409, title: 'User already exists' },
  last_owner: { status: 409, title: 'Last owner' },
  workspace_exists: { status: 409, title: 'Workspace exists' },
  product_in_use: { status: 409, title: 'Product in use' },
  group_exists: { status: 409, title: 'Group exists' },
  webhook_endpoint_disabled: { status: 409, title: 'Webhook endpoint disabled' },
  import_in_progress: { status: 409, title: 'Import in progress' },
  import_finished: { status: 409, title: 'Import finished' },
  idempotency_key_in_use: { status: 409, title: 'Idempotency key in use' },
  identity_provider_misconfigured: { status: 409, title: 'Identity provider misconfigured' },
  precondition_failed: { status: 412, title: 'Precondition failed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  uri_too_long: { status: 414, title: 'URI too long' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  unknown_product: { status: 422, title: 'Unknown product' },
  unknown_product_role: { status: 422, title: 'Unknown product role' },
  idempotency_key_reused: { status: 422, title: 'Idempotency key reused' },
  identity_provider_unreachable: { status: 422, title: 'Identity provider unreachable' },
  identity_provider_address_refused: { status: 422, title: 'Identity provider address not allowed' },
  identity_provider_http_refused: { status: 422, title: 'Identity provider over plain http not allowed' },
  identity_provider_discovery_invalid: { status: 422, title: 'Identity provider discovery document invalid' },
  identity_provider_issuer_mismatch: { status: 422, title: 'Identity provider issuer mismatch' },
  expires_at_not_in_future: { status: 422, title: 'Expiry not in the future' },
  invalid_duration: { status: 422, title: 'Invalid duration' },
  format_not_available: { status: 422, title: 'Format not available' },
  invalid_import_file: { status: 422, title: 'Invalid import file' },
  rate_limited: { status: 429, title: 'Too many requests' },
  request_header_fields_too_large: { status: 431, title: 'Request header fields too large' },
  internal_error: { status: 500, title: 'Internal server error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  database_unavailable: { status: 503, title: 'Database unavailable' },
} as const satisfies Record<string, { status: number; title: string }>;

/** One of the stable snake_case error codes of {@link ERROR_CATALOGUE}. */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** One invalid input field: `field` is a path like `user.apps[1].role` or a parameter name. */
export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/**
 * The one error type the domain throws. Its status and title come from the catalogue, so a
 * code always answers with the same status. Rendered as RFC 9457 problem details by the
 * HTTP layer; `headers` are added to that response (e.g. `Allow`, `Retry-After`).
 */
export class AppError extends Error {
  override readonly name = 'AppError';
  readonly status: number;
  readonly title: string;

  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly errors?: readonly FieldError[],
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(detail);
    this.status = ERROR_CATALOGUE[code].status;
    this.title = ERROR_CATALOGUE[code].title;
  }
}

/**
 * Errors every request of a workspace's APIs (the external API and SCIM) can be answered with:
 * addressing, authentication, scopes, limits, availability. Source: docs/contract.md Part B,
 * Addressing and tenancy, Authentication, Retries and limits, Errors.
 */
export const WORKSPACE_REQUEST_ERRORS = [
  'workspace_not_found',
  'missing_api_key',
  'invalid_api_key',
  'insufficient_scope',
  'rate_limited',
  'internal_error',
  'service_unavailable',
  'database_unavailable',
] as const satisfies readonly ErrorCode[];

/** Seconds a client should wait before retrying after a transient database error. */
export const TRANSIENT_RETRY_AFTER_SECONDS = 1;

/**
 * The answer when no database server could take the request: `503 database_unavailable` with
 * `Retry-After`. Source: docs/contract.md Part B, "A highly available database".
 */
export function databaseUnavailable(): AppError {
  return new AppError(
    'database_unavailable',
    'No database server could take this request (for example during a failover). Retry shortly: with the same Idempotency-Key a retry is applied at most once.',
    undefined,
    { 'retry-after': String(TRANSIENT_RETRY_AFTER_SECONDS) },
  );
}
