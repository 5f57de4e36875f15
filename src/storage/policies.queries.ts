import { eq, sql } from 'drizzle-orm';
import type { ExpiryPolicy, InactivityPolicy, InactivityScope, PolicyDuration, WorkspacePolicies } from '../core/lifecycle/policy.ts';
import type { PolicyRepository } from '../core/lifecycle/policy-repository.ts';
import type { Database } from './database.ts';
import { workspacePolicies } from './schema.ts';

type PolicyRow = typeof workspacePolicies.$inferSelect;

/** A stored duration, or null when its text is. */
function durationOf(text: string | null, seconds: number | null): PolicyDuration | null {
  return text === null || seconds === null ? null : { text, seconds: Number(seconds) };
}

/** A row → the domain's policies. */
function toPolicies(row: PolicyRow): WorkspacePolicies {
  const after = durationOf(row.inactivityAfter, row.inactivityAfterSeconds);
  return {
    inactivity: after
      ? {
          deactivateAfter: after,
          appliesTo: (row.inactivityAppliesTo ?? 'non_owners') as InactivityScope,
          warnBefore: durationOf(row.inactivityWarnBefore, row.inactivityWarnBeforeSeconds),
        }
      : null,
    expiry: { warnBefore: durationOf(row.expiryWarnBefore, row.expiryWarnBeforeSeconds) },
  };
}

/** The columns of an inactivity policy (all null: none). */
function inactivityColumns(policy: InactivityPolicy | null) {
  return {
    inactivityAfter: policy?.deactivateAfter.text ?? null,
    inactivityAfterSeconds: policy?.deactivateAfter.seconds ?? null,
    inactivityAppliesTo: policy?.appliesTo ?? null,
    inactivityWarnBefore: policy?.warnBefore?.text ?? null,
    inactivityWarnBeforeSeconds: policy?.warnBefore?.seconds ?? null,
  };
}

/** The columns of an expiry policy. */
function expiryColumns(policy: ExpiryPolicy) {
  return { expiryWarnBefore: policy.warnBefore?.text ?? null, expiryWarnBeforeSeconds: policy.warnBefore?.seconds ?? null };
}

/** Workspaces' policies: one row per workspace that set one, upserted. */
export function createPolicyRepository(db: Database): PolicyRepository {
  return {
    async find(workspaceId) {
      const [row] = await db.select().from(workspacePolicies).where(eq(workspacePolicies.workspaceId, workspaceId));
      return row ? toPolicies(row) : undefined;
    },

    async putInactivity(workspaceId, policy) {
      const columns = { ...inactivityColumns(policy), updatedAt: sql`now()` };
      if (policy === null) {
        const removed = await db
          .update(workspacePolicies)
          .set(columns)
          .where(sql`${workspacePolicies.workspaceId} = ${workspaceId} and ${workspacePolicies.inactivityAfter} is not null`)
          .returning({ id: workspacePolicies.workspaceId });
        return removed.length > 0;
      }
      await db
        .insert(workspacePolicies)
        .values({ workspaceId, ...columns })
        .onConflictDoUpdate({ target: workspacePolicies.workspaceId, set: columns });
      return true;
    },

    async putExpiry(workspaceId, policy) {
      const columns = { ...expiryColumns(policy), updatedAt: sql`now()` };
      await db
        .insert(workspacePolicies)
        .values({ workspaceId, ...columns })
        .onConflictDoUpdate({ target: workspacePolicies.workspaceId, set: columns });
    },
  };
}
