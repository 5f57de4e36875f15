import { and, eq, lt, sql } from 'drizzle-orm';
import type { IdentityProvider, IdentityProviderRepository } from '../core/identity-providers/identity-provider-repository.ts';
import { encryptSecret, type KeyRing } from '../core/secrets/secret-box.ts';
import type { Database } from './database.ts';
import { oidcSignIns, users, workspaceIdentityProviders } from './schema.ts';

function toProvider(row: typeof workspaceIdentityProviders.$inferSelect): IdentityProvider {
  return {
    issuer: row.issuer,
    clientId: row.clientId,
    clientSecret: row.clientSecret,
    revision: row.revision,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** The identity providers repository over Drizzle; the client secret is stored encrypted with `keyRing`. */
export function createIdentityProviderRepository(db: Database, keyRing: KeyRing): IdentityProviderRepository {
  const t = workspaceIdentityProviders;
  return {
    async find(workspaceId) {
      const [row] = await db.select().from(t).where(eq(t.workspaceId, workspaceId));
      return row ? toProvider(row) : undefined;
    },

    async put(workspaceId, given) {
      const config = { ...given, clientSecret: encryptSecret(keyRing, given.clientSecret) };
      const [row] = await db
        .insert(t)
        .values({ workspaceId, ...config })
        .onConflictDoUpdate({
          target: t.workspaceId,
          set: { ...config, revision: sql`gen_random_uuid()`, updatedAt: sql`now()` },
        })
        .returning();
      return toProvider(row!);
    },

    async delete(workspaceId) {
      const rows = await db.delete(t).where(eq(t.workspaceId, workspaceId)).returning({ id: t.workspaceId });
      return rows.length > 0;
    },

    async saveSignIn(workspaceId, stateHash, pending) {
      // Sign-ins left unfinished are dropped as new ones start, so the table stays small.
      await db.delete(oidcSignIns).where(lt(oidcSignIns.expiresAt, sql`now()`));
      await db.insert(oidcSignIns).values({ workspaceId, stateHash, ...pending });
    },

    async takeSignIn(workspaceId, stateHash) {
      const [row] = await db
        .delete(oidcSignIns)
        .where(and(eq(oidcSignIns.workspaceId, workspaceId), eq(oidcSignIns.stateHash, stateHash)))
        .returning();
      return row ? { codeVerifier: row.codeVerifier, nonce: row.nonce, idpRevision: row.idpRevision, expiresAt: row.expiresAt } : undefined;
    },

    async findActiveOwner(workspaceId, email) {
      const [row] = await db
        .select({ id: users.id, publicId: users.publicId, email: users.email })
        .from(users)
        .where(
          and(
            eq(users.workspaceId, workspaceId),
            // `email` is folded already (ASCII letters only); lower() of a stored, ASCII email is that fold.
            sql`lower(${users.email}) = ${email}`,
            eq(users.status, 'active'),
            eq(users.role, 'owner'),
            eq(users.scimDeleted, false),
          ),
        );
      return row ? { ...row, id: Number(row.id) } : undefined;
    },

    async bindSubject(workspaceId, userId, issuer, subject) {
      // SET reads the row as it was (after any concurrent binding, which the row lock waits for).
      const unbound = sql`${users.oidcSubject} is null or ${users.oidcIssuer} is distinct from ${issuer}`;
      const [row] = await db
        .update(users)
        .set({ oidcSubject: sql`case when ${unbound} then ${subject} else ${users.oidcSubject} end`, oidcIssuer: issuer })
        .where(and(eq(users.workspaceId, workspaceId), eq(users.id, userId)))
        .returning({ subject: users.oidcSubject });
      return row?.subject ?? undefined;
    },
  };
}
