/*
 * The audit row as the document describes it, with its snapshots typed: the document leaves
 * `before` and `after` open (each is the changed thing in the API's field names, or null), so a
 * test that reads a snapshot's fields names the thing it expects. Source: docs/api.md, "Audit
 * events".
 */
import type { Body } from './json.ts';

/** One row of an audit listing whose `before` and `after` are `Snapshot`s, or null where there is none. */
export type AuditEventOf<Snapshot> = Omit<Body<'listWorkspaceAuditEvents'>['audit_events'][number], 'before' | 'after'> & {
  before: Snapshot | null;
  after: Snapshot | null;
};
