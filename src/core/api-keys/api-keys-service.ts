import { toActorJson, type Actor } from '../actor.ts';
import { AppError } from '../errors.ts';
import type { Repositories, Store } from '../ports.ts';
import type { ApiKeyRecord } from './api-key-repository.ts';
import type { Workspace } from '../workspaces/workspace-repository.ts';
import { requireWorkspace } from '../workspaces/require-workspace.ts';
import { generateApiKey } from './api-key-secret.ts';
import { normaliseScopes, requireScopesOf } from './scopes.ts';

/** A newly created key with its plaintext, which is never retrievable again. */
export interface CreatedApiKey extends ApiKeyRecord {
  readonly key: string;
}

/** What a new key is made with; every field optional (no name, every scope, no expiry). */
export interface ApiKeyOptions {
  readonly name?: string;
  /** Scope names, already checked against `API_KEY_SCOPES` by the caller's schema. */
  readonly scopes?: readonly string[];
  readonly expiresAt?: Date | null;
}

function publicRecord(key: ApiKeyRecord) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    expires_at: key.expiresAt,
    created_at: key.createdAt,
    revoked_at: key.revokedAt,
  };
}

/**
 * Creates an API key inside an open transaction and audits it (used by workspace creation
 * too, so a workspace never exists without its first key).
 * @throws AppError `validation_failed` (400) when `expiresAt` is not in the future.
 */
export async function insertApiKey(tx: Repositories, workspace: Workspace, actor: Actor, options: ApiKeyOptions = {}): Promise<CreatedApiKey> {
  if (options.expiresAt && options.expiresAt.getTime() <= Date.now()) {
    throw new AppError('validation_failed', 'The key would expire before it is made.', [{ field: 'expires_at', message: 'must be in the future' }]);
  }
  const secret = generateApiKey();
  const record = await tx.apiKeys.insert(workspace.id, {
    prefix: secret.prefix,
    keyHash: secret.hash,
    name: options.name?.trim() ?? '',
    scopes: normaliseScopes(options.scopes),
    expiresAt: options.expiresAt ?? null,
    createdBy: toActorJson(actor),
  });
  await tx.audit.append({
    workspaceId: workspace.id,
    actor,
    action: 'api_key.created',
    targetType: 'api_key',
    targetId: record.id,
    before: null,
    after: publicRecord(record),
  });
  return { ...record, key: secret.key };
}

/**
 * Adds an API key to a workspace (rotation: add the new key, then revoke the old one), with
 * a name, scopes and an expiry (docs/security.md, "API keys and scopes"), never with a scope
 * the actor lacks (docs/security.md, "Self-service").
 * Source: docs/contract.md Part B, Operator interface.
 * @throws AppError `workspace_not_found` (404), `validation_failed` (400, an expiry in the past),
 *   `insufficient_scope` (403, a scope the actor lacks).
 */
export async function createApiKey(store: Store, subdomain: string, actor: Actor, options: ApiKeyOptions = {}): Promise<CreatedApiKey> {
  requireScopesOf(actor.scopes, normaliseScopes(options.scopes));
  return store.transaction(async (tx) => insertApiKey(tx, await requireWorkspace(tx, subdomain), actor, options));
}

/**
 * Lists a workspace's keys, revoked ones included, oldest first; never the plaintext.
 * @throws AppError `workspace_not_found` (404).
 */
export async function listApiKeys(store: Store, subdomain: string): Promise<ApiKeyRecord[]> {
  return store.apiKeys.findAll((await requireWorkspace(store, subdomain)).id);
}

/**
 * Revokes a key, and ends for good the console sessions opened with it (docs/security.md,
 * "Console sessions"); revoking a revoked key succeeds and changes nothing. An actor may not
 * revoke a key holding a scope it lacks (docs/security.md, "Self-service").
 * @throws AppError `workspace_not_found` / `api_key_not_found` (404), `insufficient_scope` (403).
 */
export async function revokeApiKey(store: Store, subdomain: string, id: string, actor: Actor): Promise<void> {
  await store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    const result = await tx.apiKeys.revoke(workspace.id, id);
    if (!result) throw new AppError('api_key_not_found', `No API key ${id} in workspace "${subdomain}".`);
    // Refused after the change, inside the transaction: the throw rolls the revocation back.
    requireScopesOf(actor.scopes, result.before.scopes);
    if (result.before.revokedAt) return;
    await tx.sessions.endKeySessions(workspace.id, id);
    await tx.audit.append({
      workspaceId: workspace.id,
      actor,
      action: 'api_key.revoked',
      targetType: 'api_key',
      targetId: id,
      before: publicRecord(result.before),
      after: publicRecord(result.after),
    });
  });
}
