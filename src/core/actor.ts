/**
 * Who makes a change, for the audit trail: an API key of the workspace (through the external
 * API, or through SCIM: `scim`, with the key's id), or the operator through the admin API.
 * `requestId` ties the audit event to the request's logs.
 */
export interface Actor {
  readonly type: 'api_key' | 'admin' | 'system' | 'scim';
  readonly id: string | null;
  readonly requestId: string | null;
}

/** The actor of changes the server makes on its own (e.g. the demo workspace at first start). */
export const SYSTEM_ACTOR: Actor = Object.freeze({ type: 'system', id: null, requestId: null });
