import { toActorJson } from '../actor.ts';
import type { AuditEvent } from './audit-repository.ts';

/**
 * An audit row as the API lists it (docs/api.md, "Audit trail"): its actor in full and
 * flattened, and `workspace` (a subdomain, null for the operator's rows) where the listing spans
 * workspaces. One definition for `GET /audit-events` and the `json` format of audit streams, so
 * both show the same thing.
 */
export const toWireAuditEvent = (e: AuditEvent & { readonly workspace?: string | null }) => ({
  id: e.id,
  occurred_at: e.occurredAt,
  actor: toActorJson(e.actor),
  actor_type: e.actor.type,
  actor_id: e.actor.id,
  request_id: e.actor.requestId,
  action: e.action,
  target_type: e.targetType,
  target_id: e.targetId,
  user_id: e.userId ?? null,
  before: e.before,
  after: e.after,
  ...(e.workspace === undefined ? {} : { workspace: e.workspace }),
});
