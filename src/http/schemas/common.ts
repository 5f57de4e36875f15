import { ACTOR_TYPES } from '../../core/actor.ts';
import { Type, type TSchema } from '@sinclair/typebox';
import { ERROR_CATALOGUE, WORKSPACE_REQUEST_ERRORS, type ErrorCode, type FieldError } from '../../core/errors.ts';
import type { Pagination } from '../../core/pagination.ts';
import { PAGE_DEFAULTS } from '../../core/pagination.ts';
import { PROBLEM_CONTENT_TYPE, problemType, type ProblemDetails } from '../problem.ts';

/** RFC 9457 problem details as wum sends them (docs/contract.md Part B, Errors). */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: 'URI of the problem type: `urn:wum:problem:<code>`.', examples: ['urn:wum:problem:user_not_found'] }),
    title: Type.String({ description: 'Short summary of the problem type; the same for every occurrence of a code.' }),
    status: Type.Integer({ description: 'The HTTP status code of this response.' }),
    detail: Type.String({ description: 'What went wrong in this occurrence, for people.' }),
    code: Type.String({ description: 'Stable snake_case error code, for programs.' }),
    request_id: Type.String({ description: 'The X-Request-Id of this request, for support and logs.' }),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          field: Type.String({ description: 'The invalid field or parameter.', examples: ['user.apps[1].role'] }),
          message: Type.String({ description: 'What is wrong with it.' }),
        }),
        { description: 'One entry per invalid field (validation and catalogue errors).' },
      ),
    ),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details.' },
);

/** Request id of the examples in the OpenAPI document. */
const EXAMPLE_REQUEST_ID = '7f1c2a9e-5b3d-4e8a-9c61-0d2f4b8a3e17';

/**
 * The detail (and field errors) each code's example shows in the OpenAPI document; the texts
 * are those the service sends. A code missing here gets its title as the example's detail.
 */
const PROBLEM_EXAMPLES: Partial<Record<ErrorCode, { detail: string; errors?: FieldError[] }>> = {
  validation_failed: {
    detail: 'The request body is invalid.',
    errors: [
      { field: 'user.email', message: 'must be a valid email address' },
      { field: 'user.role', message: 'must be one of: owner, non_owner' },
    ],
  },
  invalid_parameter: {
    detail: 'Invalid querystring: page_size.',
    errors: [{ field: 'page_size', message: 'must be <= 100' }],
  },
  malformed_json: { detail: "The body is not valid JSON: Expected property name or '}' in JSON at position 1" },
  bad_request: { detail: 'The URL path is not validly percent-encoded.' },
  missing_api_key: { detail: 'Send an API key of this workspace in the X-Api-Key header.' },
  invalid_api_key: { detail: 'The API key is not valid for this workspace.' },
  invalid_admin_token: { detail: 'Send the operator token as Authorization: Bearer <token>.' },
  insufficient_scope: { detail: 'This API key lacks the scope users:write.' },
  invalid_session: { detail: 'Sign in to the console again: the session ended or never existed.' },
  cross_origin_refused: { detail: 'A change made with a console session must come from the console itself.' },
  key_sign_in_disabled: { detail: 'This server does not let an API key open a console session.' },
  sign_in_refused: { detail: 'ada@example.com is not an active owner of this workspace.' },
  not_found: { detail: 'No resource at GET /api/external/v2/nothing.' },
  workspace_not_found: { detail: 'No workspace "acme".' },
  user_not_found: { detail: 'No user with email ada@example.com in this workspace.' },
  api_key_not_found: { detail: 'No API key 3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30 in workspace "acme".' },
  identity_provider_not_found: { detail: 'Workspace "acme" has no identity provider.' },
  product_not_found: { detail: 'No product named "support".' },
  webhook_endpoint_not_found: { detail: 'No webhook endpoint 0b8e2d4c-6f1a-4c3b-9e7d-5a2f8c1b3d90 in workspace "acme".' },
  webhook_delivery_not_found: { detail: 'No delivery 7d3f9a2b-1c4e-4b8a-a6f0-2e9c5d7b1a38 of webhook endpoint 0b8e2d4c-6f1a-4c3b-9e7d-5a2f8c1b3d90.' },
  webhook_endpoint_disabled: { detail: 'Webhook endpoint 0b8e2d4c-6f1a-4c3b-9e7d-5a2f8c1b3d90 is disabled; enable it first.' },
  user_already_exists: { detail: 'An active user with email ada@example.com already exists.' },
  last_owner: { detail: 'olivia@example.com is the last active owner of this workspace.' },
  workspace_exists: { detail: 'A workspace with this subdomain already exists.' },
  product_in_use: { detail: 'Product "crm" is in use: active users hold "admin", "member".' },
  idempotency_key_in_use: { detail: 'A request with this Idempotency-Key is still being processed.' },
  precondition_failed: { detail: 'The user has changed since the ETag sent in If-Match; fetch it again and retry.' },
  payload_too_large: { detail: 'The request body is larger than 64 KiB.' },
  unsupported_media_type: { detail: 'Send the body as application/json.' },
  unknown_product: {
    detail: 'One or more products do not exist.',
    errors: [{ field: 'user.apps[0].name', message: 'unknown product "billing"' }],
  },
  unknown_product_role: {
    detail: 'One or more roles do not exist in their product.',
    errors: [{ field: 'user.apps[0].role', message: '"wizard" is not a role of product "crm" (roles: admin, member)' }],
  },
  idempotency_key_reused: { detail: 'This Idempotency-Key was used with a different request.' },
  expires_at_not_in_future: {
    detail: 'An expiry must be in the future.',
    errors: [{ field: 'user.expires_at', message: 'must be later than now' }],
  },
  invalid_duration: {
    detail: 'The duration is invalid.',
    errors: [{ field: 'deactivate_after', message: 'must be at least P1D' }],
  },
  policy_not_found: { detail: 'Workspace "acme" has no inactivity policy.' },
  rate_limited: { detail: 'Too many requests for this API key; retry after the time in Retry-After.' },
  internal_error: { detail: 'An unexpected error occurred; the request id identifies it in our logs.' },
  service_unavailable: { detail: 'The database is busy; retry shortly.' },
  database_unavailable: { detail: 'No database server could take this request (for example during a failover). Retry shortly: with the same Idempotency-Key a retry is applied at most once.' },
};

/** The example problem body of `code`, as the service renders it. */
export function problemExample(code: ErrorCode): ProblemDetails {
  const { status, title } = ERROR_CATALOGUE[code];
  const example = PROBLEM_EXAMPLES[code];
  return {
    type: problemType(code),
    title,
    status,
    detail: example?.detail ?? `${title}.`,
    code,
    request_id: EXAMPLE_REQUEST_ID,
    ...(example?.errors ? { errors: example.errors } : {}),
  };
}

/**
 * Errors every external-API route can answer: those of every workspace request, and a console session's (docs/security.md,
 * "Console sessions").
 */
export const EXTERNAL_API_ERRORS = [
  ...WORKSPACE_REQUEST_ERRORS,
  'invalid_session',
  'cross_origin_refused',
] as const satisfies readonly ErrorCode[];

/** Errors every route with a JSON body can answer: its media type, its syntax, its size, its fields. */
export const BODY_ERRORS = ['unsupported_media_type', 'malformed_json', 'payload_too_large', 'validation_failed'] as const satisfies readonly ErrorCode[];

/** `Retry-After` as the service sends it with 429, 503 and `409 idempotency_key_in_use`. */
const RetryAfterHeader = {
  type: 'integer',
  minimum: 0,
  description: 'Seconds to wait before retrying (RFC 9110 §10.2.3).',
} as const;

/** Response headers documented per error status. */
const PROBLEM_HEADERS: Partial<Record<number, Record<string, object>>> = {
  429: {
    'Retry-After': RetryAfterHeader,
    RateLimit: { type: 'string', description: 'Remaining quota and seconds to reset (draft-ietf-httpapi-ratelimit-headers).' },
    'RateLimit-Policy': { type: 'string', description: 'The quota policy: requests (`q`) per window (`w`, seconds).' },
  },
  503: { 'Retry-After': RetryAfterHeader },
};

/**
 * Error responses for the given codes, grouped by status: `application/problem+json` with the
 * `Problem` schema, a description naming the codes, and one example per code. The content form
 * documents the media type; errors are sent as ready strings, so no serializer is involved.
 */
export function problemResponses(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const { status } = ERROR_CATALOGUE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => {
      const headers = status === 409 && list.includes('idempotency_key_in_use') ? { 'Retry-After': RetryAfterHeader } : PROBLEM_HEADERS[status];
      const response = {
        description: `Problem details; \`code\` is ${list.map((c) => `\`${c}\``).join(' or ')}.`,
        ...(headers ? { headers } : {}),
        content: {
          [PROBLEM_CONTENT_TYPE.split(';', 1)[0]!]: {
            schema: Type.Ref(ProblemSchema),
            examples: Object.fromEntries(
              list.map((code) => [code, { summary: ERROR_CATALOGUE[code].title, value: problemExample(code) }]),
            ),
          },
        },
      };
      return [status, response];
    }),
  );
}

/**
 * A documented JSON success response: its description, schema, one example and headers (the
 * content form, so the example sits on the media type and a `$ref` schema stays a reference).
 */
export function jsonResponse<T extends TSchema>(
  description: string,
  schema: T,
  example: unknown,
  headers?: Record<string, object>,
) {
  return { description, ...(headers ? { headers } : {}), content: { 'application/json': { schema, example } } };
}

/** The `Link` header of paginated listings. */
export const LinkHeader = {
  type: 'string',
  description: 'RFC 8288 links to the `first`, `prev`, `next` and `last` pages.',
} as const;

/** Query parameters of every paginated listing (docs/contract.md Part B, Listing). */
export const PageQuery = {
  page_number: Type.Integer({
    minimum: 1,
    maximum: PAGE_DEFAULTS.maxPageNumber,
    default: PAGE_DEFAULTS.pageNumber,
    description: 'Page to return, from 1. A page past the end is empty (an empty list means the end).',
    examples: [1],
  }),
  page_size: Type.Integer({
    minimum: 1,
    maximum: PAGE_DEFAULTS.maxPageSize,
    default: PAGE_DEFAULTS.pageSize,
    description: 'Items per page, 1-100 (10-100 recommended).',
    examples: [30],
  }),
};

/** The pagination envelope (docs/contract.md Part A). */
export const PaginationSchema = Type.Object(
  {
    total_records: Type.Integer({ description: 'Items across all pages.' }),
    current_page_number: Type.Integer({ description: 'The page returned, from 1.' }),
    total_pages: Type.Integer({ description: '`ceil(total_records / page_size)`; 0 when there are no items.' }),
    page_size: Type.Integer({ description: 'Items per page.' }),
  },
  { description: 'Where this page sits in the whole listing.' },
);

/** Domain pagination → wire envelope, including `total_count` (= total_records). */
export function toWirePagination(p: Pagination) {
  return {
    pagination: {
      total_records: p.totalRecords,
      current_page_number: p.currentPageNumber,
      total_pages: p.totalPages,
      page_size: p.pageSize,
    },
    total_count: p.totalRecords,
  };
}

/** A timestamp on the wire: RFC 3339 in UTC. */
export const Timestamp = Type.Unsafe<Date | string>({ type: 'string', format: 'date-time' });
/** Nullable timestamp. */
export const NullableTimestamp = Type.Unsafe<Date | string | null>({ type: ['string', 'null'], format: 'date-time' });

/** A string enum as JSON Schema `enum` (clearer errors than a union of constants). */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: { default?: T[number]; description?: string; examples?: T[number][] } = {},
) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** An actor on the wire: who made a change (docs/security.md, "Actors"). */
export const ActorSchema = Type.Object(
  {
    type: StringEnum(ACTOR_TYPES, { description: 'What kind of actor: a person, an API key, SCIM, the operator, the server itself.' }),
    id: Type.Union([Type.String(), Type.Null()], { description: "A stable id: the key's id (api_key, scim), the person's user id, `oidc:<sub>` for an operator signed in to the console; null for the operator token and system." }),
    label: Type.Union([Type.String(), Type.Null()], { description: "A readable name: the key's name and prefix, the person's email." }),
  },
  { $id: 'Actor', description: 'Who made a change.', examples: [{ type: 'api_key', id: '3f2b8c1e-9a4d-4b7e-8f06-1c5d2e7a9b30', label: 'provisioning (wum_AbCd1234)' }] },
);
