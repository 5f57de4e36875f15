import { paginate, type Page, type PageRequest } from '../pagination.ts';
import type { AuditEvent, AuditFilter, Store } from '../ports.ts';
import { requireWorkspace } from '../workspaces/require-workspace.ts';

/**
 * Lists a workspace's audit events, oldest first, narrowed by `filter`
 * (docs/contract.md Part B, Retries, limits and audit).
 * @throws AppError `workspace_not_found` (404).
 */
export async function listAuditEvents(
  store: Store,
  subdomain: string,
  page: PageRequest,
  filter: AuditFilter = {},
): Promise<Page<AuditEvent>> {
  const workspace = await requireWorkspace(store, subdomain);
  const { rows, total } = await store.audit.findPage(workspace.id, page, filter);
  return { items: rows, pagination: paginate(page, total) };
}

/** An audit event of the global listing, with the subdomain of its workspace (null: the catalogue's, or a deleted workspace's). */
export type GlobalAuditEvent = AuditEvent & { readonly workspace: string | null };

/**
 * Lists every audit event, global ones (product changes, workspace deletions) included, oldest
 * first, narrowed by `filter` and, with `workspace`, to the events of that workspace (none
 * when no workspace has that subdomain). Each event names its workspace's subdomain, so the
 * operator sees whose change it was without filtering (docs/console.md, "Audit log").
 */
export async function listAllAuditEvents(
  store: Store,
  page: PageRequest,
  filter: AuditFilter & { readonly workspace?: string } = {},
): Promise<Page<GlobalAuditEvent>> {
  const { workspace: subdomain, ...rest } = filter;
  if (subdomain === undefined) {
    const { rows, total } = await store.audit.findPage(null, page, rest);
    const subdomains = await store.workspaces.findSubdomains(rows.flatMap((row) => (row.workspaceId === null ? [] : [row.workspaceId])));
    const items = rows.map((row) => ({ ...row, workspace: row.workspaceId === null ? null : (subdomains.get(row.workspaceId) ?? null) }));
    return { items, pagination: paginate(page, total) };
  }
  const workspace = await store.workspaces.findBySubdomain(subdomain.toLowerCase());
  if (!workspace) return { items: [], pagination: paginate(page, 0) };
  const { rows, total } = await store.audit.findPage(workspace.id, page, rest);
  return { items: rows.map((row) => ({ ...row, workspace: workspace.subdomain })), pagination: paginate(page, total) };
}
