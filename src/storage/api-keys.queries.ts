import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import type { ActorJson } from '../core/actor.ts';
import type { StoredScope } from '../core/api-keys/scopes.ts';
import type { ApiKeyRecord, ApiKeyRepository } from '../core/api-keys/api-key-repository.ts';
import type { Database } from './database.ts';
import { isUuid } from './uuid.ts';
import { apiKeys, workspaces } from './schema.ts';

const publicColumns = {
  id: apiKeys.id,
  prefix: apiKeys.prefix,
  name: apiKeys.name,
  scopes: sql<StoredScope[]>`${apiKeys.scopes}`,
  expiresAt: apiKeys.expiresAt,
  createdBy: sql<ActorJson | null>`${apiKeys.createdBy}`,
  createdAt: apiKeys.createdAt,
  lastUsedAt: apiKeys.lastUsedAt,
  revokedAt: apiKeys.revokedAt,
};

/** The API keys repository over Drizzle; keys are found by (workspace, SHA-256 hash). */
export function createApiKeyRepository(db: Database): ApiKeyRepository {
  return {
    async insert(workspaceId, key) {
      const [row] = await db
        .insert(apiKeys)
        .values({ workspaceId, ...key, scopes: [...key.scopes] })
        .returning(publicColumns);
      return row!;
    },

    async findAll(workspaceId) {
      return db.select(publicColumns).from(apiKeys).where(eq(apiKeys.workspaceId, workspaceId)).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
    },

    async revoke(workspaceId, id) {
      // Not a UUID cannot name a key; answering "not found" beats a database type error.
      if (!isUuid(id)) return undefined;
      const where = and(eq(apiKeys.workspaceId, workspaceId), eq(apiKeys.id, id));
      const [before] = await db.select(publicColumns).from(apiKeys).where(where).for('update');
      if (!before) return undefined;
      if (before.revokedAt) return { before, after: before };
      const [after] = await db.update(apiKeys).set({ revokedAt: sql`now()` }).where(where).returning(publicColumns);
      return { before, after: after as ApiKeyRecord };
    },

    async resolve(subdomain, keyHash) {
      const [row] = await db
        .select({
          workspace: workspaces,
          apiKeyId: apiKeys.id,
          name: apiKeys.name,
          prefix: apiKeys.prefix,
          scopes: apiKeys.scopes,
          expiresAt: apiKeys.expiresAt,
        })
        .from(workspaces)
        .leftJoin(
          apiKeys,
          and(eq(apiKeys.workspaceId, workspaces.id), eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)),
        )
        .where(eq(workspaces.subdomain, subdomain))
        .limit(1);
      if (!row) return { workspace: undefined, apiKey: undefined };
      const { apiKeyId, name, prefix, scopes, expiresAt } = row;
      return {
        workspace: { ...row.workspace, id: Number(row.workspace.id) },
        apiKey: apiKeyId ? { id: apiKeyId, name: name ?? '', prefix: prefix ?? '', scopes: scopes ?? [], expiresAt } : undefined,
      };
    },

    async touch(workspaceId, id) {
      await db.update(apiKeys).set({ lastUsedAt: sql`now()` }).where(and(eq(apiKeys.workspaceId, workspaceId), eq(apiKeys.id, id)));
    },
  };
}
