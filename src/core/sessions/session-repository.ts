import type { ActorJson } from '../actor.ts';
import type { LiveApiKey } from '../api-keys/api-key-repository.ts';
import type { Workspace } from '../workspaces/workspace-repository.ts';

/*
 * Workspaces' console sessions as the domain stores them: the session and its port
 * (storage/sessions.queries.ts).
 */

/** A console session as stored: the key it acts with (if still live) and its times. */
export interface StoredSession {
  /** The unrevoked key the session acts with; undefined once revoked (the session is then over). */
  readonly apiKey: LiveApiKey | undefined;
  /**
   * A person's session: whether its person is still an active owner of the workspace and the
   * workspace's identity provider is still the one it signed in with (else the session is over).
   */
  readonly person?: { readonly userId: string; readonly stillOwner: boolean; readonly sameIdentityProvider: boolean };
  readonly actor: ActorJson;
  readonly lastSeenAt: Date;
  readonly expiresAt: Date;
  readonly endedAt: Date | null;
}

/** Console sessions, stored by the SHA-256 hash of their id; never cached, so an end is seen at once everywhere. */
export interface SessionRepository {
  insert(
    workspaceId: number,
    session: { idHash: string; apiKeyId?: string; userId?: number; idpRevision?: string; actor: ActorJson; expiresAt: Date },
  ): Promise<void>;
  /** The workspace of `subdomain` and, when it has one with this hash, the session. */
  resolve(subdomain: string, idHash: string): Promise<{ workspace: Workspace | undefined; session: StoredSession | undefined }>;
  /** Records a use (callers throttle how often). */
  touch(workspaceId: number, idHash: string): Promise<void>;
  /** Ends the session (sign-out); ending an ended or unknown one changes nothing. */
  end(workspaceId: number, idHash: string): Promise<void>;
  /**
   * Ends for good the workspace's sessions opened with a key: those of `apiKeyId` (the key is
   * revoked), or all of them (the workspace enrols an identity provider).
   */
  endKeySessions(workspaceId: number, apiKeyId?: string): Promise<void>;
  /**
   * Ends the live sessions of one key or one person (`users.id`) beyond the `keep` newest
   * (the cap on sessions per principal); resolves with how many it ended.
   */
  endOldest(workspaceId: number, principal: { readonly apiKeyId: string } | { readonly userId: number }, keep: number): Promise<number>;
}
