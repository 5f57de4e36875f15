import { AppError } from '../errors.ts';
import type { Store, Workspace } from '../ports.ts';
import { hashApiKey } from './api-key-secret.ts';

/** A request's authenticated tenant: the workspace and the key that opened it. */
export interface Tenant {
  readonly workspace: Workspace;
  readonly apiKeyId: string;
}

/**
 * Resolves the workspace of a subdomain and checks that `apiKey` is a live key of it, in
 * one look-up by the key's hash. The workspace is checked first (docs/contract.md Part B, order of
 * checks); unknown, revoked and foreign keys fail alike so no key's existence leaks.
 *
 * @param subdomain - the lower-cased label from the Host header.
 * @param apiKey - the `X-Api-Key` header value, possibly missing or empty.
 * @throws AppError `workspace_not_found` (404), `missing_api_key` (401), `invalid_api_key` (401).
 */
export async function authenticate(store: Store, subdomain: string, apiKey: string | undefined): Promise<Tenant> {
  const presented = apiKey?.trim() ? apiKey.trim() : undefined;
  const { workspace, apiKeyId } = await store.apiKeys.resolve(subdomain, presented ? hashApiKey(presented) : '');
  if (!workspace) throw new AppError('workspace_not_found', `No workspace "${subdomain}".`);
  if (!presented) throw new AppError('missing_api_key', 'Send an API key of this workspace in the X-Api-Key header.');
  if (!apiKeyId) throw new AppError('invalid_api_key', 'The API key is not valid for this workspace.');
  return { workspace, apiKeyId };
}
