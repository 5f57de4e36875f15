/*
 * The workspace's access policies (`/policies/inactivity`, `/policies/expiry`) and the scopes of
 * the console's session, typed from sdk/schema.ts (docs/contract.md Part B, "Access that ends on time").
 */
import type { operations } from '../../../sdk/schema.ts';
import { errorFromResponse, WumApiError } from '../../../sdk/errors.ts';
import { SESSION_PATH } from '../session.ts';
import { api, send } from './client.ts';

/** The inactivity policy: `deactivate_after`, `applies_to`, `warn_before` (durations as written). */
export type InactivityPolicy = operations['putInactivityPolicy']['requestBody']['content']['application/json'];
/** The warning before expiries: `warn_before` (a duration, or null for none). */
export type ExpiryPolicy = operations['putExpiryPolicy']['requestBody']['content']['application/json'];

const INACTIVITY = '/api/external/v2/policies/inactivity';
const EXPIRY = '/api/external/v2/policies/expiry';

/** The workspace's policies. Every call throws WumApiError on failure (see `send`). */
export const policiesApi = {
  /** The inactivity policy, or null when the workspace has none (`404 policy_not_found`). */
  async inactivity(signal?: AbortSignal): Promise<InactivityPolicy | null> {
    try {
      return (await send(`GET ${INACTIVITY}`, (s) => api.GET(INACTIVITY, { signal: s }), signal)).data;
    } catch (error) {
      if (error instanceof WumApiError && error.code === 'policy_not_found') return null;
      throw error;
    }
  },
  /** Sets the inactivity policy. @throws `invalid_duration` (422), `validation_failed` (400), `forbidden` (403). */
  async putInactivity(policy: InactivityPolicy): Promise<InactivityPolicy> {
    return (await send(`PUT ${INACTIVITY}`, (s) => api.PUT(INACTIVITY, { body: policy, signal: s }))).data;
  },
  /** Removes the inactivity policy. @throws `policy_not_found` (404), `forbidden` (403). */
  async removeInactivity(): Promise<void> {
    await send(`DELETE ${INACTIVITY}`, (s) => api.DELETE(INACTIVITY, { signal: s }));
  },
  /** The warning before expiries (`warn_before` null: none). */
  async expiry(signal?: AbortSignal): Promise<ExpiryPolicy> {
    return (await send(`GET ${EXPIRY}`, (s) => api.GET(EXPIRY, { signal: s }), signal)).data;
  },
  /** Sets the warning before expiries. @throws `invalid_duration` (422), `forbidden` (403). */
  async putExpiry(policy: ExpiryPolicy): Promise<ExpiryPolicy> {
    return (await send(`PUT ${EXPIRY}`, (s) => api.PUT(EXPIRY, { body: policy, signal: s }))).data;
  },
};

/**
 * The scopes of the console's session (`GET` of the session: a key's session has the key's
 * scopes, an owner's session every workspace scope), so pages can say why a control is off
 * before the API refuses it (docs/security.md, "Console sessions").
 * @throws WumApiError, e.g. `invalid_session` when the session ended.
 */
export async function sessionScopes(signal?: AbortSignal): Promise<string[]> {
  const response = await fetch(SESSION_PATH, { credentials: 'same-origin', ...(signal ? { signal } : {}) });
  const body: unknown = await response.json().catch(() => undefined);
  if (!response.ok) throw errorFromResponse(`GET ${SESSION_PATH}`, response, body);
  return (body as { scopes?: string[] }).scopes ?? [];
}
