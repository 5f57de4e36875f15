import type { AppError, ErrorCode } from '../core/errors.ts';
import { URN } from './constants.ts';

/** A SCIM error response body (RFC 7644 §3.12): `status` is a string, `scimType` only where one applies. */
export interface ScimErrorBody {
  readonly schemas: readonly [typeof URN.error];
  readonly status: string;
  readonly scimType?: string;
  readonly detail: string;
}

/**
 * How wum's error codes read in SCIM: the scimType of RFC 7644 §3.12 Table 9 for bad requests
 * and conflicts, and the status SCIM clients expect where it differs (SCIM has no 422: a
 * role outside the catalogue is a `400 invalidValue`).
 */
const SCIM_FORMS: Partial<Record<ErrorCode, { status?: number; scimType?: string }>> = {
  invalid_filter: { scimType: 'invalidFilter' },
  invalid_path: { scimType: 'invalidPath' },
  invalid_value: { scimType: 'invalidValue' },
  invalid_syntax: { scimType: 'invalidSyntax' },
  mutability: { scimType: 'mutability' },
  no_target: { scimType: 'noTarget' },
  malformed_json: { scimType: 'invalidSyntax' },
  bad_request: { scimType: 'invalidSyntax' },
  validation_failed: { scimType: 'invalidValue' },
  invalid_parameter: { scimType: 'invalidValue' },
  unknown_product: { status: 400, scimType: 'invalidValue' },
  unknown_product_role: { status: 400, scimType: 'invalidValue' },
  idempotency_key_reused: { status: 400, scimType: 'invalidValue' },
  user_already_exists: { scimType: 'uniqueness' },
  group_exists: { scimType: 'uniqueness' },
};

/** Details that name the native API's ways where SCIM has its own. */
const SCIM_DETAILS: Partial<Record<ErrorCode, string>> = {
  missing_api_key: 'Send an API key of this workspace as a bearer token: Authorization: Bearer <key>.',
  user_not_found: 'No such user in this workspace.',
};

/**
 * The SCIM error of an AppError: its HTTP status and body. Field errors are folded into
 * `detail`. Source: RFC 7644 §3.12; docs/contract.md Part B, SCIM 2.0 provisioning ("errors are
 * SCIM errors").
 */
export function toScimError(error: AppError): { status: number; body: ScimErrorBody } {
  const form = SCIM_FORMS[error.code] ?? {};
  const status = form.status ?? error.status;
  const fields = error.errors?.length ? ` (${error.errors.map((e) => `${e.field}: ${e.message}`).join('; ')})` : '';
  return {
    status,
    body: {
      schemas: [URN.error],
      status: String(status),
      ...(form.scimType ? { scimType: form.scimType } : {}),
      detail: `${SCIM_DETAILS[error.code] ?? error.detail}${fields}`,
    },
  };
}
