import type { ActorJson } from '../actor.ts';
import type { Awaitable } from '../awaitable.ts';
import type { Workspace } from '../workspaces/workspace-repository.ts';
import type { StoredScope } from './scopes.ts';

/*
 * API keys as the domain stores them: the key's records and its port (storage/api-keys.queries.ts),
 * which also resolves a request's workspace with its key in one look-up.
 */

/** An API key's public record; the plaintext is never stored. */
export interface ApiKeyRecord {
  readonly id: string;
  readonly prefix: string;
  /** A name people give it (e.g. `okta-scim`); empty for keys made before names existed. */
  readonly name: string;
  /** The scopes it carries, in canonical order, or `['*']`: every scope, present and future. */
  readonly scopes: readonly StoredScope[];
  /** When it stops working; null for never. */
  readonly expiresAt: Date | null;
  /** Who made it; null for keys made before actors were recorded. */
  readonly createdBy: ActorJson | null;
  readonly createdAt: Date;
  readonly lastUsedAt: Date | null;
  readonly revokedAt: Date | null;
}

/** What a new key is stored with, beside its workspace. */
export interface NewApiKey {
  readonly prefix: string;
  readonly keyHash: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly expiresAt: Date | null;
  readonly createdBy: ActorJson;
}

/** An unrevoked key as authentication sees it (possibly expired: the caller checks the time). */
export interface LiveApiKey {
  readonly id: string;
  readonly name: string;
  readonly prefix: string;
  readonly scopes: readonly string[];
  readonly expiresAt: Date | null;
}

/** Result of resolving a request's workspace and API key in one look-up. */
export interface Credentials {
  readonly workspace: Workspace | undefined;
  /** The matching, unrevoked key of that workspace, if any. */
  readonly apiKey: LiveApiKey | undefined;
}

/** API keys of workspaces, stored as hashes. */
export interface ApiKeyRepository {
  insert(workspaceId: number, key: NewApiKey): Promise<ApiKeyRecord>;
  findAll(workspaceId: number): Promise<ApiKeyRecord[]>;
  /** Marks a key revoked (keeping the first revocation time); undefined when unknown. */
  revoke(workspaceId: number, id: string): Promise<{ before: ApiKeyRecord; after: ApiKeyRecord } | undefined>;
  /**
   * Resolves a subdomain and a key hash to the workspace and its live key: at once (no
   * promise) when the answer is held in memory, else a promise of it.
   */
  resolve(subdomain: string, keyHash: string): Awaitable<Credentials>;
  /** Records that a key was used (callers throttle how often). */
  touch(workspaceId: number, id: string): Promise<void>;
}
