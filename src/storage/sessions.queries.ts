import { and, desc, eq, gt, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import type { ActorJson } from '../core/actor.ts';
import type { SessionRepository } from '../core/sessions/session-repository.ts';
import type { Database } from './database.ts';
import { apiKeys, consoleSessions, users, workspaceIdentityProviders, workspaces } from './schema.ts';

/** The console sessions repository over Drizzle: one look-up per request, by (workspace, hash of the id). */
export function createSessionRepository(db: Database): SessionRepository {
  const bySession = (workspaceId: number, idHash: string) =>
    and(eq(consoleSessions.workspaceId, workspaceId), eq(consoleSessions.idHash, idHash));
  return {
    async insert(workspaceId, session) {
      await db.insert(consoleSessions).values({ workspaceId, ...session });
    },

    async resolve(subdomain, idHash) {
      const [row] = await db
        .select({
          workspace: workspaces,
          found: consoleSessions.idHash,
          actor: sql<ActorJson>`${consoleSessions.actor}`,
          lastSeenAt: consoleSessions.lastSeenAt,
          expiresAt: consoleSessions.expiresAt,
          endedAt: consoleSessions.endedAt,
          keyId: apiKeys.id,
          keyName: apiKeys.name,
          keyPrefix: apiKeys.prefix,
          keyScopes: apiKeys.scopes,
          keyExpiresAt: apiKeys.expiresAt,
          userId: users.publicId,
          stillOwner: sql<boolean>`(${users.status} = 'active' and ${users.role} = 'owner' and not ${users.scimDeleted})`,
          sameIdp: sql<boolean>`(${workspaceIdentityProviders.revision} is not distinct from ${consoleSessions.idpRevision})`,
        })
        .from(workspaces)
        .leftJoin(consoleSessions, and(eq(consoleSessions.workspaceId, workspaces.id), eq(consoleSessions.idHash, idHash)))
        .leftJoin(
          apiKeys,
          and(eq(apiKeys.workspaceId, workspaces.id), eq(apiKeys.id, consoleSessions.apiKeyId), isNull(apiKeys.revokedAt)),
        )
        // A person's session: its user and the workspace's identity provider, checked on every request.
        .leftJoin(users, and(eq(users.workspaceId, workspaces.id), eq(users.id, consoleSessions.userId)))
        .leftJoin(workspaceIdentityProviders, eq(workspaceIdentityProviders.workspaceId, workspaces.id))
        .where(eq(workspaces.subdomain, subdomain))
        .limit(1);
      if (!row) return { workspace: undefined, session: undefined };
      const workspace = { ...row.workspace, id: Number(row.workspace.id) };
      if (!row.found) return { workspace, session: undefined };
      return {
        workspace,
        session: {
          apiKey: row.keyId
            ? { id: row.keyId, name: row.keyName ?? '', prefix: row.keyPrefix ?? '', scopes: row.keyScopes ?? [], expiresAt: row.keyExpiresAt }
            : undefined,
          ...(row.userId ? { person: { userId: row.userId, stillOwner: row.stillOwner === true, sameIdentityProvider: row.sameIdp === true } } : {}),
          actor: typeof row.actor === 'string' ? (JSON.parse(row.actor) as ActorJson) : row.actor,
          lastSeenAt: row.lastSeenAt!,
          expiresAt: row.expiresAt!,
          endedAt: row.endedAt,
        },
      };
    },

    async touch(workspaceId, idHash) {
      await db.update(consoleSessions).set({ lastSeenAt: sql`now()` }).where(bySession(workspaceId, idHash));
    },

    async end(workspaceId, idHash) {
      await db
        .update(consoleSessions)
        .set({ endedAt: sql`now()` })
        .where(and(bySession(workspaceId, idHash), isNull(consoleSessions.endedAt)));
    },

    async endKeySessions(workspaceId, apiKeyId) {
      await db
        .update(consoleSessions)
        .set({ endedAt: sql`now()` })
        .where(
          and(
            eq(consoleSessions.workspaceId, workspaceId),
            apiKeyId === undefined ? isNotNull(consoleSessions.apiKeyId) : eq(consoleSessions.apiKeyId, apiKeyId),
            isNull(consoleSessions.endedAt),
          ),
        );
    },

    async endOldest(workspaceId, principal, keep) {
      const owner = 'apiKeyId' in principal ? eq(consoleSessions.apiKeyId, principal.apiKeyId) : eq(consoleSessions.userId, principal.userId);
      const beyond = db
        .select({ idHash: consoleSessions.idHash })
        .from(consoleSessions)
        .where(and(eq(consoleSessions.workspaceId, workspaceId), owner, isNull(consoleSessions.endedAt), gt(consoleSessions.expiresAt, sql`now()`)))
        .orderBy(desc(consoleSessions.createdAt), desc(consoleSessions.idHash))
        .offset(keep);
      const ended = await db
        .update(consoleSessions)
        .set({ endedAt: sql`now()` })
        .where(and(eq(consoleSessions.workspaceId, workspaceId), inArray(consoleSessions.idHash, beyond)))
        .returning({ idHash: consoleSessions.idHash });
      return ended.length;
    },
  };
}
