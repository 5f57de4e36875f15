/*
 * The workspace's access policies (`/policies/inactivity`, `/policies/expiry`), typed from sdk/schema.ts (docs/contract.md Part B, "Access that ends on time").
 */
import type { operations } from '../../../sdk/schema.ts';
import { WumApiError } from '../../../sdk/errors.ts';
import { api, send } from './client.ts';
import { pathFor, type Where } from './where.ts';

/** The inactivity policy: `deactivate_after`, `applies_to`, `warn_before` (durations as written). */
export type InactivityPolicy = operations['putInactivityPolicy']['requestBody']['content']['application/json'];
/** The warning before expiries: `warn_before` (a duration, or null for none). */
export type ExpiryPolicy = operations['putExpiryPolicy']['requestBody']['content']['application/json'];

const INACTIVITY = '/api/external/v2/policies/inactivity';
const EXPIRY = '/api/external/v2/policies/expiry';

/**
 * The workspace's policies, for its owner (a workspace session) or the operator (see where.ts).
 * Every call throws WumApiError on failure (see `send`).
 */
export const policiesApi = {
  /** The inactivity policy, or null when the workspace has none (`404 policy_not_found`). */
  async inactivity(where: Where, signal?: AbortSignal): Promise<InactivityPolicy | null> {
    const path = pathFor(where, INACTIVITY);
    try {
      return (await send(`GET ${path}`, (s) => api.GET(path, { signal: s }), signal)).data;
    } catch (error) {
      if (error instanceof WumApiError && error.code === 'policy_not_found') return null;
      throw error;
    }
  },
  /** Sets the inactivity policy. @throws `invalid_duration` (422), `validation_failed` (400), `forbidden` (403). */
  async putInactivity(where: Where, policy: InactivityPolicy): Promise<InactivityPolicy> {
    const path = pathFor(where, INACTIVITY);
    return (await send(`PUT ${path}`, (s) => api.PUT(path, { body: policy, signal: s }))).data;
  },
  /** Removes the inactivity policy. @throws `policy_not_found` (404), `forbidden` (403). */
  async removeInactivity(where: Where): Promise<void> {
    const path = pathFor(where, INACTIVITY);
    await send(`DELETE ${path}`, (s) => api.DELETE(path, { signal: s }));
  },
  /** The warning before expiries (`warn_before` null: none). */
  async expiry(where: Where, signal?: AbortSignal): Promise<ExpiryPolicy> {
    const path = pathFor(where, EXPIRY);
    return (await send(`GET ${path}`, (s) => api.GET(path, { signal: s }), signal)).data;
  },
  /** Sets the warning before expiries. @throws `invalid_duration` (422), `forbidden` (403). */
  async putExpiry(where: Where, policy: ExpiryPolicy): Promise<ExpiryPolicy> {
    const path = pathFor(where, EXPIRY);
    return (await send(`PUT ${path}`, (s) => api.PUT(path, { body: policy, signal: s }))).data;
  },
};
