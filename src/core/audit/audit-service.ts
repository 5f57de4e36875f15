import { paginate, type Page, type PageRequest } from '../pagination.ts';
import type { AuditEvent, Store } from '../ports.ts';
import { requireWorkspace } from '../workspaces/require-workspace.ts';

/**
 * Lists a workspace's audit events, oldest first (SPEC.md Part B, Retries, limits and audit).
 * @throws AppError `workspace_not_found` (404).
 */
export async function listAuditEvents(store: Store, subdomain: string, page: PageRequest): Promise<Page<AuditEvent>> {
  const workspace = await requireWorkspace(store, subdomain);
  const { rows, total } = await store.audit.findPage(workspace.id, page);
  return { items: rows, pagination: paginate(page, total) };
}

/** Lists every audit event, global ones (product changes) included, oldest first. */
export async function listAllAuditEvents(store: Store, page: PageRequest): Promise<Page<AuditEvent>> {
  const { rows, total } = await store.audit.findPage(null, page);
  return { items: rows, pagination: paginate(page, total) };
}
