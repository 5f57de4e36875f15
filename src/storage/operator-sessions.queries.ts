import { and, desc, eq, gt, inArray, isNull, lt, sql } from 'drizzle-orm';
import type { ActorJson } from '../core/actor.ts';
import type { OperatorSessionRepository } from '../core/sessions/operator-session-repository.ts';
import type { Database } from './database.ts';
import { operatorIdentities, operatorSessions, operatorSignIns } from './schema.ts';

/** Operators' console sessions and sign-ins under way over Drizzle: one look-up per request, by the hash of the id. */
export function createOperatorSessionRepository(db: Database): OperatorSessionRepository {
  return {
    async insert(session) {
      await db.insert(operatorSessions).values(session);
    },

    async find(idHash) {
      const [row] = await db.select().from(operatorSessions).where(eq(operatorSessions.idHash, idHash)).limit(1);
      if (!row) return undefined;
      const actor = (typeof row.actor === 'string' ? JSON.parse(row.actor) : row.actor) as ActorJson;
      return { email: row.email, issuer: row.issuer, actor, lastSeenAt: row.lastSeenAt, expiresAt: row.expiresAt, endedAt: row.endedAt };
    },

    async touch(idHash) {
      await db.update(operatorSessions).set({ lastSeenAt: sql`now()` }).where(eq(operatorSessions.idHash, idHash));
    },

    async end(idHash) {
      await db
        .update(operatorSessions)
        .set({ endedAt: sql`now()` })
        .where(and(eq(operatorSessions.idHash, idHash), isNull(operatorSessions.endedAt)));
    },

    async endOldest(email, keep) {
      const beyond = db
        .select({ idHash: operatorSessions.idHash })
        .from(operatorSessions)
        .where(and(sql`lower(${operatorSessions.email}) = lower(${email})`, isNull(operatorSessions.endedAt), gt(operatorSessions.expiresAt, sql`now()`)))
        .orderBy(desc(operatorSessions.createdAt), desc(operatorSessions.idHash))
        .offset(keep);
      const ended = await db
        .update(operatorSessions)
        .set({ endedAt: sql`now()` })
        .where(inArray(operatorSessions.idHash, beyond))
        .returning({ idHash: operatorSessions.idHash });
      return ended.length;
    },

    async saveSignIn(stateHash, pending) {
      // Sign-ins left unfinished are dropped as new ones start, so the table stays small.
      await db.delete(operatorSignIns).where(lt(operatorSignIns.expiresAt, sql`now()`));
      await db.insert(operatorSignIns).values({ stateHash, ...pending });
    },

    async takeSignIn(stateHash) {
      const [row] = await db.delete(operatorSignIns).where(eq(operatorSignIns.stateHash, stateHash)).returning();
      return row ? { codeVerifier: row.codeVerifier, nonce: row.nonce, expiresAt: row.expiresAt } : undefined;
    },

    async bindSubject(issuer, email, subject) {
      // One statement, so two first sign-ins at once bind one `sub`: the update changes nothing
      // and only makes RETURNING give the row that was there.
      const [row] = await db
        .insert(operatorIdentities)
        .values({ issuer, email, subject })
        .onConflictDoUpdate({ target: [operatorIdentities.issuer, operatorIdentities.email], set: { email: sql`excluded.email` } })
        .returning({ subject: operatorIdentities.subject });
      return row!.subject;
    },
  };
}
