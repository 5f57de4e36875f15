import { apiKeyLabel, type Actor, type ActorJson } from '../actor.ts';
import { AppError } from '../errors.ts';
import { LRUCache } from 'lru-cache';
import { andThen, type Awaitable } from '../awaitable.ts';
import type { Store } from '../ports.ts';
import type { Credentials, LiveApiKey } from './api-key-repository.ts';
import type { Workspace } from '../workspaces/workspace-repository.ts';
import { hashApiKey } from './api-key-secret.ts';
import { requireScopeOf } from './scopes.ts';

/** A request's authenticated tenant: the workspace and the key that opened it. */
export interface Tenant {
  readonly workspace: Workspace;
  readonly apiKey: LiveApiKey;
  /** The key's id (same as `apiKey.id`). */
  readonly apiKeyId: string;
}

/** Keys that opened a request lately, and their hashes: most requests come with one of a few keys. */
const knownKeyHashes = new LRUCache<string, string>({ max: 1_000 });

/**
 * The hash of a presented key ({@link hashApiKey}), remembered for keys that proved live, so
 * that a client's every request does not hash its key again (about 2–3 µs each). Keys that
 * failed are not remembered: a flood of wrong keys cannot push the live ones out.
 */
function presentedKeyHash(presented: string): string {
  return knownKeyHashes.get(presented) ?? hashApiKey(presented);
}

/** The tenant of `credentials` for the presented key, checked in the order of docs/contract.md Part B. */
function tenantOf(credentials: Credentials, subdomain: string, presented: string | undefined, keyHash: string, now: number): Tenant {
  const { workspace, apiKey: key } = credentials;
  if (!workspace) throw new AppError('workspace_not_found', `No workspace "${subdomain}".`);
  if (!presented) throw new AppError('missing_api_key', 'Send an API key of this workspace in the X-Api-Key header.');
  if (!key || (key.expiresAt && key.expiresAt.getTime() <= now)) {
    throw new AppError('invalid_api_key', 'The API key is not valid for this workspace.');
  }
  knownKeyHashes.set(presented, keyHash);
  return { workspace, apiKey: key, apiKeyId: key.id };
}

/**
 * Resolves the workspace of a subdomain and checks that `apiKey` is a live key of it, in
 * one look-up by the key's hash. The workspace is checked first (docs/contract.md Part B, order of
 * checks); unknown, revoked, expired and foreign keys fail alike so no key's existence leaks.
 * The expiry is compared with `now` on every call, cached key or not, so an expired key is
 * refused everywhere at the same moment without anybody announcing it. Answers at once
 * (throwing at once) when the store answers from memory, else with a promise.
 *
 * @param subdomain - the lower-cased label from the Host header.
 * @param apiKey - the `X-Api-Key` header value, possibly missing or empty.
 * @param now - the current time (ms since the epoch).
 * @throws AppError `workspace_not_found` (404), `missing_api_key` (401), `invalid_api_key` (401).
 */
export function authenticate(store: Store, subdomain: string, apiKey: string | undefined, now = Date.now()): Awaitable<Tenant> {
  const presented = apiKey?.trim() ? apiKey.trim() : undefined;
  const keyHash = presented ? presentedKeyHash(presented) : '';
  return andThen(store.apiKeys.resolve(subdomain, keyHash), (credentials) => tenantOf(credentials, subdomain, presented, keyHash, now));
}

/**
 * Refuses a request whose key lacks `scope` (a key of `*` holds every scope).
 * @throws AppError `insufficient_scope` (403), naming the scope.
 */
export function requireScope(tenant: Tenant, scope: string): void {
  requireScopeOf(tenant.apiKey.scopes, scope);
}

/** The actor of a change made with the tenant's key: `api_key`, or `scim` through the SCIM service. */
export function keyActor(tenant: Tenant, type: 'api_key' | 'scim', requestId: string): Actor {
  // A person signed in to the console acts as themself, not as a key.
  const session = (tenant as { session?: { actor: ActorJson } }).session;
  const scopes = tenant.apiKey.scopes;
  if (session?.actor.type === 'person') return { ...session.actor, requestId, scopes };
  return { type, id: tenant.apiKey.id, label: apiKeyLabel(tenant.apiKey.name, tenant.apiKey.prefix), requestId, scopes };
}
