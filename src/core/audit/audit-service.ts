import { paginate, type PageRequest, type Pagination } from '../pagination.ts';
import type { Store } from '../ports.ts';
import type { AuditEvent, AuditFilter } from './audit-repository.ts';
import { requireWorkspace } from '../workspaces/require-workspace.ts';

/**
 * A page of the audit trail and where the next one starts: `nextCursor` is the id of its last
 * event when more follow in the listing's order, else null. Read by page number it has its
 * `pagination`; read by cursor it has none, since counting every event past the cursor would
 * cost each page a walk of the rest of the trail (docs/api.md, "Audit trail").
 */
export interface AuditPage<T> {
  readonly items: readonly T[];
  readonly pagination?: Pagination;
  readonly nextCursor: number | null;
}

/** An audit event of the global listing, with the subdomain of its workspace (null: the catalogue's, or a deleted workspace's). */
export type GlobalAuditEvent = AuditEvent & { readonly workspace: string | null };

/** Events past this id per export batch: small enough for constant memory, large enough for few round trips. */
const AUDIT_EXPORT_BATCH = 1000;

/**
 * Which trail an export reads: one workspace's, as its own listing shows it; or, for the
 * operator, every workspace's and the catalogue's (or only `workspace`'s), each event naming
 * its workspace as the global listing does.
 */
export type AuditExportScope = { readonly subdomain: string } | { readonly all: true; readonly workspace?: string };

/** The events of `page`, or of the page past the event `afterId`, with `nextCursor` when the listing goes on past them. */
async function readPage(
  store: Store,
  workspaceId: number | null,
  page: PageRequest,
  filter: AuditFilter,
  afterId: number | undefined,
): Promise<AuditPage<AuditEvent>> {
  if (afterId !== undefined) {
    // One event more than the page tells whether another page follows, without a count.
    const rows = await store.audit.findBatch(workspaceId, page.pageSize + 1, filter, { afterId });
    const items = rows.slice(0, page.pageSize);
    return { items, nextCursor: rows.length > page.pageSize ? items[items.length - 1]!.id : null };
  }
  const { rows, total } = await store.audit.findPage(workspaceId, page, filter);
  const more = rows.length > 0 && (page.pageNumber - 1) * page.pageSize + rows.length < total;
  return { items: rows, pagination: paginate(page, total), nextCursor: more ? rows[rows.length - 1]!.id : null };
}

/**
 * Lists a workspace's audit events, oldest first unless `filter.newestFirst`, narrowed by
 * `filter`; by page number, or past the event `afterId` (a cursor that stays put while events
 * are written). Source: docs/contract.md Part B, Retries, limits and audit; docs/api.md, "Audit trail".
 * @throws AppError `workspace_not_found` (404).
 */
export async function listAuditEvents(
  store: Store,
  subdomain: string,
  page: PageRequest,
  filter: AuditFilter = {},
  afterId?: number,
): Promise<AuditPage<AuditEvent>> {
  const workspace = await requireWorkspace(store, subdomain);
  return readPage(store, workspace.id, page, filter, afterId);
}

/** `rows` with the subdomain of each one's workspace (one lookup for them all). */
async function withSubdomains(store: Store, rows: readonly AuditEvent[]): Promise<GlobalAuditEvent[]> {
  const subdomains = await store.workspaces.findSubdomains(rows.flatMap((row) => (row.workspaceId === null ? [] : [row.workspaceId])));
  return rows.map((row) => ({ ...row, workspace: row.workspaceId === null ? null : (subdomains.get(row.workspaceId) ?? null) }));
}

/**
 * Lists every audit event, global ones (product changes, workspace deletions) included, oldest
 * first, narrowed by `filter` and, with `workspace`, to the events of that workspace (none
 * when no workspace has that subdomain); by page number or past the event `afterId`. Each
 * event names its workspace's subdomain, so the operator sees whose change it was without
 * filtering (docs/console.md, "Audit log").
 */
export async function listAllAuditEvents(
  store: Store,
  page: PageRequest,
  filter: AuditFilter & { readonly workspace?: string } = {},
  afterId?: number,
): Promise<AuditPage<GlobalAuditEvent>> {
  const { workspace: subdomain, ...rest } = filter;
  if (subdomain === undefined) {
    const listed = await readPage(store, null, page, rest, afterId);
    return { ...listed, items: await withSubdomains(store, listed.items) };
  }
  const workspace = await store.workspaces.findBySubdomain(subdomain.toLowerCase());
  if (!workspace) return { items: [], ...(afterId === undefined ? { pagination: paginate(page, 0) } : {}), nextCursor: null };
  const listed = await readPage(store, workspace.id, page, rest, afterId);
  return { ...listed, items: listed.items.map((row) => ({ ...row, workspace: workspace.subdomain })) };
}

/**
 * The events of one workspace (`scope.subdomain`) or of all (each with its workspace's
 * subdomain), oldest first, in batches of {@link AUDIT_EXPORT_BATCH} read by id: memory stays
 * constant however long the trail. The export ends at the last event written when it started,
 * so a busy workspace's export ends too. Source: docs/api.md, "Exporting the audit trail".
 * @throws AppError `workspace_not_found` (404), before the first batch.
 */
export async function exportAuditEvents(
  store: Store,
  scope: AuditExportScope,
  filter: AuditFilter = {},
): Promise<AsyncGenerator<ReadonlyArray<AuditEvent | GlobalAuditEvent>>> {
  let workspaceId: number | null = null;
  let label: ((rows: readonly AuditEvent[]) => Promise<ReadonlyArray<AuditEvent | GlobalAuditEvent>>) | undefined;
  if ('subdomain' in scope) {
    workspaceId = (await requireWorkspace(store, scope.subdomain)).id;
  } else if (scope.workspace === undefined) {
    label = (rows) => withSubdomains(store, rows);
  } else {
    const workspace = await store.workspaces.findBySubdomain(scope.workspace.toLowerCase());
    // No such workspace: nothing to export, as its listing shows nothing.
    if (!workspace) return (async function* nothing() {})();
    workspaceId = workspace.id;
    label = async (rows) => rows.map((row) => ({ ...row, workspace: workspace.subdomain }));
  }
  const maxId = await store.audit.lastId();
  const oldestFirst: AuditFilter = { ...filter, newestFirst: false };
  async function* batches() {
    let afterId = 0;
    for (;;) {
      const rows = await store.audit.findBatch(workspaceId, AUDIT_EXPORT_BATCH, oldestFirst, { afterId, maxId });
      if (rows.length === 0) return;
      yield label ? await label(rows) : rows;
      if (rows.length < AUDIT_EXPORT_BATCH) return;
      afterId = rows[rows.length - 1]!.id;
    }
  }
  return batches();
}
