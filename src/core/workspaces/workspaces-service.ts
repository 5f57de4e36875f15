import type { Actor } from '../actor.ts';
import { insertApiKey, type CreatedApiKey } from '../api-keys/api-keys-service.ts';
import { paginate, type Page, type PageRequest } from '../pagination.ts';
import type { Store } from '../ports.ts';
import type { Workspace } from './workspace-repository.ts';
import { requireWorkspace } from './require-workspace.ts';

/** A created workspace with its first API key (plaintext shown once). */
export interface CreatedWorkspace {
  readonly workspace: Workspace;
  readonly apiKey: CreatedApiKey;
}

/**
 * Creates a workspace and its first API key in one transaction.
 * Source: docs/contract.md Part B, Operator interface (`POST /admin/v1/workspaces`).
 *
 * @param subdomain - a DNS label (validated by the caller); stored lower-cased.
 * @param name - display name; defaults to the subdomain.
 * @throws AppError `workspace_exists` (409).
 */
export async function createWorkspace(
  store: Store,
  subdomain: string,
  name: string | undefined,
  actor: Actor,
): Promise<CreatedWorkspace> {
  const normalized = subdomain.toLowerCase();
  return store.transaction(async (tx) => {
    const workspace = await tx.workspaces.insert(normalized, name ?? normalized);
    await tx.audit.append({
      workspaceId: workspace.id,
      actor,
      action: 'workspace.created',
      targetType: 'workspace',
      targetId: workspace.subdomain,
      before: null,
      after: { subdomain: workspace.subdomain, name: workspace.name },
    });
    return { workspace, apiKey: await insertApiKey(tx, workspace, actor) };
  });
}

/**
 * Finds a workspace by subdomain.
 * @throws AppError `workspace_not_found` (404).
 */
export async function getWorkspace(store: Store, subdomain: string): Promise<Workspace> {
  return requireWorkspace(store, subdomain);
}

/** Lists workspaces, oldest first. */
export async function listWorkspaces(store: Store, page: PageRequest): Promise<Page<Workspace>> {
  const { rows, total } = await store.workspaces.findPage(page);
  return { items: rows, pagination: paginate(page, total) };
}

/**
 * Deletes a workspace with all its users, keys and audit trail (the customer's data goes
 * with it). The deletion itself is audited as `workspace.deleted` in the global trail
 * (no workspace id, since the workspace's own trail goes with it).
 * @throws AppError `workspace_not_found` (404).
 */
export async function deleteWorkspace(store: Store, subdomain: string, actor: Actor): Promise<void> {
  await store.transaction(async (tx) => {
    const workspace = await requireWorkspace(tx, subdomain);
    await tx.workspaces.delete(workspace.id);
    await tx.audit.append({
      workspaceId: null,
      actor,
      action: 'workspace.deleted',
      targetType: 'workspace',
      targetId: workspace.subdomain,
      before: { subdomain: workspace.subdomain, name: workspace.name },
      after: null,
    });
  });
}
